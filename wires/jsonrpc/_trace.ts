// The wire trace of a JSON-RPC channel (ChannelOptions.trace, CONDUIT_TRACE): one line per
// message sent (→) or received (←): a request with its id and method, a notification, a
// response with its id and the time since its request, an error with its code, a batch with
// its size; the message's text follows, cut. Loaded only by a channel that traces. What the
// peer wrote is shown with its control characters escaped (the line breaks JSON allows between
// tokens as spaces), so that it cannot start a line of its own or drive the terminal.

import { printable } from "../../_utf8.ts";

/** The most characters of a message's text in a line. */
const MAX_TEXT_CHARS = 160;
/**
 * The most requests whose start is remembered for the time to their answer: one that is
 * never answered (an MCP call cancelled, a peer that stays silent) would otherwise be kept
 * for the life of the connection.
 */
const MAX_BEGAN = 1024;

const utf8 = new TextDecoder();

/** Turns JSON-RPC messages into trace lines for `sink`. */
export class JsonRpcTrace {
  readonly #sink: (line: string) => void;
  /** When each request in flight was sent (→) or received (←), by direction and id. */
  readonly #began = new Map<string, number>();

  constructor(sink: (line: string) => void, _render: (body: Uint8Array) => string) {
    this.#sink = (line) => sink(printable(line));
  }

  /** One message, `out` when this side sent it, `at` the `performance.now()` it was seen. */
  frame(out: boolean, frame: Uint8Array, at: number): void {
    const arrow = out ? "→" : "←";
    const text = utf8.decode(frame);
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.#sink(`jsonrpc ${arrow} ${frame.length} B not JSON: ${clip(text)}`);
      return;
    }
    const what = Array.isArray(message)
      ? `BATCH of ${message.length}`
      : this.#describe(message as Record<string, unknown>, out, at);
    // JSON allows tabs and line breaks only between tokens, where a space means the same.
    this.#sink(`jsonrpc ${arrow} ${what} ${frame.length} B ${clip(text).replace(BLANKS, " ")}`);
  }

  /** Notes when a request began; past the bound, the oldest is forgotten. */
  #begin(key: string, at: number): void {
    const began = this.#began;
    began.delete(key);
    if (began.size >= MAX_BEGAN) began.delete(began.keys().next().value!);
    began.set(key, at);
  }

  #describe(message: Record<string, unknown>, out: boolean, at: number): string {
    const id = message?.id;
    const shownId = clip(JSON.stringify(id) ?? "");
    const key = (maker: string) => `${maker}${shownId}`;
    if (typeof message?.method === "string") {
      if (id === undefined) return `NOTIFICATION ${clip(message.method)}`;
      this.#begin(key(out ? "→" : "←"), at);
      return `REQUEST ${shownId} ${clip(message.method)}`;
    }
    // A response answers the other side's request.
    const began = this.#began.get(key(out ? "←" : "→"));
    this.#began.delete(key(out ? "←" : "→"));
    const since = began === undefined ? "" : ` (+${(at - began).toFixed(1)} ms)`;
    const error = message?.error as { code?: unknown } | undefined;
    // The peer's code as JSON: an array of arrays as a template's string would recurse as deep
    // as it is nested, and overflow the stack of the read loop.
    const code = error?.code;
    return error !== undefined
      ? `ERROR ${shownId} code ${
        typeof code === "number" ? code : clip(JSON.stringify(code) ?? "")
      }${since}`
      : `RESULT ${shownId}${since}`;
  }
}

/** The whitespace JSON allows between tokens, other than the space. */
const BLANKS = /[\t\n\r]/g;

function clip(text: string): string {
  return text.length <= MAX_TEXT_CHARS ? text : `${text.slice(0, MAX_TEXT_CHARS)}…`;
}
