// The wire trace of a conduit channel (ChannelOptions.trace, CONDUIT_TRACE): one line per
// frame sent (→) or received (←), with its kind, call id, method, body size, the codec's
// rendering of a small body, and the time since the call began. Loaded only by a channel that
// traces. The handshake's secrets never appear: an AUTH frame's proof and a HELLO's nonce are
// left out. What the peer chose (method names, reasons, bodies) is shown with its control
// characters escaped, so that it cannot start a line of its own or drive the terminal.

import { printable } from "../../_utf8.ts";
import { decodeEnvelope, type Envelope } from "../../protocol/envelope.ts";
import { AUTH_KIND } from "../../protocol/format.ts";

/** Renders a body as the channel's codec reads it. */
export type RenderBody = (body: Uint8Array) => string;

/** The most body bytes decoded for a trace line; larger bodies show their size only. */
const MAX_RENDERED_BYTES = 4096;
/** The most characters of a rendered body in a line. */
const MAX_RENDERED_CHARS = 96;

const utf8 = new TextDecoder();

/** Turns frames into trace lines for `sink`. */
export class ConduitTrace {
  readonly #sink: (line: string) => void;
  readonly #render: RenderBody;
  /** When each call in flight began, by direction ("→" this side's, "←" the peer's) and id. */
  readonly #began = new Map<string, number>();

  constructor(sink: (line: string) => void, render: RenderBody) {
    this.#sink = (line) => sink(printable(line));
    this.#render = render;
  }

  /** One frame, `out` when this side sent it, `at` the `performance.now()` it was seen. */
  frame(out: boolean, frame: Uint8Array, at: number): void {
    const arrow = out ? "→" : "←";
    if (frame[0] === AUTH_KIND) {
      this.#sink(`conduit ${arrow} AUTH (proof not shown)`);
      return;
    }
    let envelope: Envelope;
    try {
      envelope = decodeEnvelope(frame);
    } catch (error) {
      this.#sink(`conduit ${arrow} ${frame.length} B not a frame: ${(error as Error).message}`);
      return;
    }
    this.#sink(`conduit ${arrow} ${this.#describe(envelope, out, at)}`);
  }

  #describe(envelope: Envelope, out: boolean, at: number): string {
    const kind = envelope.kind.toUpperCase();
    switch (envelope.kind) {
      case "hello":
        return `${kind} ${helloText(envelope.body)}`;
      case "goodbye":
        return envelope.body.length === 0 ? kind : `${kind} ${clip(utf8.decode(envelope.body))}`;
      case "ping":
      case "pong":
        return `${kind} ${envelope.nonce}`;
      case "shape":
        return `${kind} ${envelope.id} ${clip(JSON.stringify(envelope.keys))}`;
      case "call": {
        // A call is the sender's: its later frames name the id in the sender's numbering.
        this.#began.set(`${out ? "→" : "←"}${envelope.id}`, at);
        const meta = envelope.meta === undefined ? "" : ` meta ${utf8.decode(envelope.meta)}`;
        const timeout = envelope.timeoutMs === 0 ? "" : ` timeout ${envelope.timeoutMs} ms`;
        return `${kind} #${envelope.id} ${envelope.method}${timeout}${meta} ${
          this.#body(envelope.body)
        }`;
      }
      case "notify":
        return `${kind} ${envelope.method} ${this.#body(envelope.body)}`;
      case "result":
        return `${kind} #${envelope.id} ${this.#body(envelope.body)}${
          this.#since(out, true, envelope.id, at, true)
        }`;
      case "error":
        return `${kind} #${envelope.id} ${clip(utf8.decode(envelope.body))}${
          this.#since(out, envelope.receiverId, envelope.id, at, true)
        }`;
      case "cancel":
        return `${kind} #${envelope.id} ${clip(utf8.decode(envelope.body))}${
          this.#since(out, envelope.receiverId, envelope.id, at, false)
        }`;
      case "data":
        return `${kind} #${envelope.id} ${this.#body(envelope.body)}${
          this.#since(out, envelope.receiverId, envelope.id, at, false)
        }`;
      case "end":
        return `${kind} #${envelope.id}${
          this.#since(out, envelope.receiverId, envelope.id, at, false)
        }`;
      case "credit":
        return `${kind} #${envelope.id} ${envelope.bytes} B`;
    }
  }

  /**
   * The time since the call a frame is about began: a call of the frame's receiver
   * (`receiversCall`: a RESULT, or a frame with the R flag) or of its sender. `last` when the
   * frame ends the call.
   */
  #since(out: boolean, receiversCall: boolean, id: number, at: number, last: boolean): string {
    const maker = out === receiversCall ? "←" : "→";
    const key = `${maker}${id}`;
    const began = this.#began.get(key);
    if (began === undefined) return "";
    if (last) this.#began.delete(key);
    return ` (+${(at - began).toFixed(1)} ms)`;
  }

  #body(body: Uint8Array): string {
    if (body.length === 0) return "no value";
    if (body.length > MAX_RENDERED_BYTES) return `${body.length} B`;
    let text: string;
    try {
      text = this.#render(body);
    } catch {
      return `${body.length} B`;
    }
    return `${body.length} B ${clip(text)}`;
  }
}

/** A HELLO's JSON with its auth nonce left out. */
function helloText(body: Uint8Array): string {
  try {
    const hello = JSON.parse(utf8.decode(body));
    if (hello?.auth !== undefined) hello.auth = { method: hello.auth.method, role: "…" };
    return clip(JSON.stringify(hello), 200);
  } catch {
    return `${body.length} B`;
  }
}

function clip(text: string, max = MAX_RENDERED_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
