// JSON-RPC 2.0 (LSP, MCP) behind the engine's seam (wires/types.ts): Content-Length or NDJSON
// framing, no handshake, and each message (or each member of a batch) turned into an engine
// event. A message is classified by its shape before it is checked: one with a result, an
// error or only an id and no method (or a null one) is a response, never answered (one
// without "jsonrpc" is taken, as vscode-jsonrpc takes it, and reported once). What JSON-RPC
// answers and goes on after — a parse error (-32700), an invalid request (-32600), a batch
// over `maxBatchMessages` refused whole — is answered here and reported to `onProtocolError`
// (a client answers nothing with id null: it only reports); an answer to no request in flight
// is reported and dropped, unless it answers a call this side cancelled. Only a framing
// failure (a message over the limit, a broken header, input ending inside a message) ends the
// connection, since the next message cannot be found; the peer's end is named in JSON-RPC's
// words (peerEnded).

import { ContentLengthDecoder } from "../../framing/_content_length_decoder.ts";
import { LineSplitter } from "../../framing/_line_splitter.ts";
import { type PushDecoder, QueueSplitter } from "../../framing/_queue_splitter.ts";
import { FrameWriter } from "../../framing/frame_writer.ts";
import { headersIn, ProtocolError } from "../../protocol/format.ts";
import type { Transport } from "../../transports/types.ts";
import type { JsonRpcDialect, JsonRpcId } from "./dialect.ts";
import { type Batch, INVALID_REQUEST, JsonRpcOutbox, PARSE_ERROR } from "./outbox.ts";
import { DEFAULT_MAX_BATCH_MESSAGES } from "./limits.ts";
import { traceFeed, writeTarget } from "../codec_slots.ts";
import type {
  ChunkReader,
  EventNames,
  IncomingEvents,
  LifecycleEvents,
  OutgoingEvents,
  Wire,
  WireEvents,
  WireFactory,
  WireOptions,
} from "../types.ts";
import { RemoteError, TruncatedFrameError } from "../../errors.ts";
import { within } from "../../_runtime.ts";
import { printable } from "../../_utf8.ts";

/** How JSON-RPC names each event in the engine's error messages. */
const NAMES: EventNames = {
  call: "request",
  notify: "notification",
  result: "response",
  callError: "error response",
  resultItem: "stream item",
  resultEnd: "stream end",
  paramCredit: "credit",
  paramCancel: "cancel",
  paramItem: "stream item",
  paramEnd: "stream end",
  paramError: "stream error",
  resultCredit: "credit",
  cancel: "cancel notification",
  item: "stream item",
  goodbye: "close",
};

/** What selects and tunes the JSON-RPC wire. */
export interface JsonRpcWireOptions {
  readonly framing: "content-length" | "ndjson";
  readonly dialect: JsonRpcDialect;
  /**
   * The most requests and notifications one received batch may hold; a larger one is
   * refused. @default {DEFAULT_MAX_BATCH_MESSAGES}
   */
  readonly maxBatchMessages?: number;
  /**
   * Which end this is: a client never answers with id null (input it cannot parse, a message
   * that is no request): it reports it, since a server may not take `id: null`.
   */
  readonly role?: "client" | "server";
  /**
   * Whether a handler serves `method`: a notification none serves goes to
   * {@linkcode onUnhandledNotification} instead of the engine. Absent, every one goes to
   * the engine.
   */
  readonly serves?: (method: string) => boolean;
  /** Told of each notification no handler serves (dropped when absent); never throws. */
  readonly onUnhandledNotification?: (method: string, params: unknown) => void;
  /** Let JSON change values it cannot hold (a Map as `{}`) instead of failing the message. */
  readonly lossy?: boolean;
  /** Told of what the peer sent wrong that JSON-RPC lets the connection survive. */
  readonly onProtocolError: (error: ProtocolError) => void;
}

/** Makes the JSON-RPC wire factory for `options`. */
export function jsonRpcWire(options: JsonRpcWireOptions): WireFactory {
  return (transport, wireOptions) => new JsonRpcWire(transport, wireOptions, options);
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** JSON-RPC's {@linkcode Wire}. */
export class JsonRpcWire implements Wire {
  /**
   * Never waited for, even where the peer answers a cancelled request (LSP): the outbox
   * recognises a late answer itself (takeCancelled), and a server that never sends one would
   * otherwise hold a call slot for the connection's life.
   */
  readonly answersCancelled = false;
  /**
   * A peer ends a JSON-RPC connection by ending its stream (vscode-jsonrpc's onClose); a child
   * process, only by exiting with status 0 as it does (not later, nor by a signal).
   */
  get endIsGoodbye(): boolean {
    const status = this.#exit;
    if (status === undefined) return !(childStatus(this.#transport) instanceof Promise);
    return status.code === 0 && status.signal === null;
  }
  readonly outbox: JsonRpcOutbox;
  readonly decoder: QueueSplitter;
  readonly #transport: Transport;
  readonly #options: WireOptions;
  readonly #rpc: JsonRpcWireOptions;
  #reader: ChunkReader | undefined;
  #closing = false;
  /** The peer process's exit status, once its output ended and it exited. */
  #exit: Deno.CommandStatus | undefined;
  /** Whether a response without `"jsonrpc":"2.0"` was reported (once is enough). */
  #lenient = false;
  #outgoing!: OutgoingEvents;
  #incoming!: IncomingEvents;
  #lifecycle!: LifecycleEvents;
  /** Feeds the wire trace, when the channel traces. */
  readonly #onFrame: ((out: boolean, frame: Uint8Array) => void) | undefined;
  /** Settles once the trace's formatter is loaded (no frame is read before). */
  readonly ready: Promise<void> | undefined;

  constructor(transport: Transport, options: WireOptions, rpc: JsonRpcWireOptions) {
    if (options.auth !== undefined) {
      // Checked before the transport is touched: a secret must never be silently ignored.
      throw new TypeError("JSON-RPC has no handshake to authenticate in: auth is conduit's own");
    }
    this.#transport = transport;
    this.#options = options;
    this.#rpc = rpc;
    const trace = options.trace &&
      traceFeed(
        options.trace,
        () => import("./_trace.ts").then(({ JsonRpcTrace }) => JsonRpcTrace),
      );
    this.#onFrame = trace?.feed;
    this.ready = trace?.loaded;
    const maxFrameBytes = options.maxFrameBytes;
    this.decoder = new QueueSplitter(
      rpc.framing === "ndjson"
        ? new NdjsonLines(maxFrameBytes)
        : new ContentLengthDecoder({ maxFrameBytes }),
    );
    const writer = new FrameWriter(writeTarget(transport), {
      framing: rpc.framing,
      maxFrameBytes: 0xffff_ffff,
      highWaterMark: options.writeHighWaterMark,
      onFailure: options.onWriteFailure,
      // A transport is done with a chunk once its write resolved (transports/types.ts).
      reuseChunks: true,
    });
    this.outbox = new JsonRpcOutbox(writer, {
      dialect: rpc.dialect,
      maxFrameBytes,
      trustPeer: options.trustPeer,
      lossy: rpc.lossy ?? false,
      onWriteError: options.onWriteFailure,
      onFrame: this.#onFrame,
      onGoodbye: () => {
        this.#closing = true;
        this.#lifecycle.onGoodbye(undefined, undefined);
      },
    });
  }

  attach(events: WireEvents): void {
    this.#outgoing = events.outgoing;
    this.#incoming = events.incoming;
    this.#lifecycle = events.lifecycle;
  }

  start(): void {
    const options = this.#options;
    this.#lifecycle.onEstablished({
      version: 2,
      codec: "json",
      maxFrameBytes: options.maxFrameBytes,
      maxInFlight: options.maxInFlight,
      streamWindowBytes: options.streamWindowBytes,
      features: [],
    });
  }

  reader(): ChunkReader {
    return this.#reader ??= this.#watchExit(chunkReader(this.#transport));
  }

  peerEnded(): string {
    const role = this.#rpc.role;
    const peer = role === "client" ? "The server" : role === "server" ? "The client" : "The peer";
    const status = this.#exit;
    if (status === undefined) return `${peer} closed the connection`;
    return `${peer} closed the connection: its process ${
      status.signal !== null
        ? `was killed by ${status.signal}`
        : `exited with status ${status.code}`
    }`;
  }

  /**
   * Over a child process (a transport with an exit `status`), the end of its output waits
   * for its exit status, for {@linkcode peerEnded}: a process whose stdout ended is exiting,
   * so the wait is short, and bounded for one that closed its stdout and lives on.
   */
  #watchExit(reader: ChunkReader): ChunkReader {
    const status = childStatus(this.#transport);
    if (!(status instanceof Promise)) return reader;
    const exited = (status as Promise<Deno.CommandStatus>).then((status) => {
      this.#exit = status;
    }, () => {});
    return {
      readBytes: () =>
        reader.readBytes().then((chunk) => chunk !== null ? chunk : waitFor(exited, EXIT_WAIT_MS)),
      cancel: () => reader.cancel(),
    };
  }

  get names(): EventNames {
    return NAMES;
  }

  read(frame: Uint8Array): void {
    this.#onFrame?.(false, frame);
    let message: unknown;
    try {
      message = JSON.parse(utf8.decode(frame));
    } catch (error) {
      if (this.#rpc.role === "client") {
        this.#report(
          `A message that is not JSON (${frame.length} bytes), not answered: this side is ` +
            `the client (role)`,
          error,
        );
        return;
      }
      this.#report(`A message that is not JSON (${frame.length} bytes)`, error);
      this.#refuse(null, PARSE_ERROR, "Parse error", undefined);
      return;
    }
    if (!Array.isArray(message)) {
      this.#message(message, undefined);
      return;
    }
    if (message.length === 0) {
      this.#invalid(null, "an empty batch", undefined);
      return;
    }
    const max = this.#rpc.maxBatchMessages ?? DEFAULT_MAX_BATCH_MESSAGES;
    if (message.length > max) {
      // Refused whole, before any member is looked at: nothing of it runs, and a batch costs
      // no more than its parse (bounded by maxFrameBytes) beyond this limit.
      this.#invalid(
        null,
        `a batch of ${message.length} message${message.length === 1 ? "" : "s"} exceeds ` +
          `maxBatchMessages (${max})`,
        undefined,
      );
      return;
    }
    const batch = this.outbox.openBatch();
    for (const member of message) this.#message(member, batch);
    this.outbox.sealBatch(batch);
  }

  decode(_slot: unknown, body: unknown): unknown {
    return body;
  }

  decodeError(body: unknown): Error {
    const error = body as { code?: unknown; message?: unknown; data?: unknown } | null;
    if (typeof error !== "object" || error === null || typeof error.code !== "number") {
      return new RemoteError({
        name: "RemoteError",
        message: `A malformed JSON-RPC error: ${shown(body)}`,
        code: -32603,
      });
    }
    // Its code is what a caller acts on (ContentModified, ServerCancelled…): kept, with its
    // data, when the message is missing or no string, as vscode-jsonrpc and the MCP SDKs keep it.
    const text = error.message;
    const message = typeof text === "string"
      ? text
      : text === undefined || text === null
      ? `A JSON-RPC error without a message (code ${error.code})`
      : `A JSON-RPC error whose message is no string: ${shown(text)}`;
    return new RemoteError({ name: "RemoteError", message, code: error.code, data: error.data });
  }

  // ---------------------------------------------------------------- one message

  #message(message: unknown, batch: Batch | undefined): void {
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      this.#invalid(null, "a message that is not an object", batch);
      return;
    }
    const fields = message as Record<string, unknown>;
    const id = fields.id;
    const hasId = id !== undefined;
    const method = fields.method;
    if (
      // `"method": null` is no method, as vscode-jsonrpc reads it (a serializer that writes
      // every member of one message type sends it in responses).
      (method === undefined || method === null) &&
      ("result" in fields || fields.error !== undefined ||
        ((typeof id === "number" || typeof id === "string") && !("params" in fields)))
    ) {
      // A response by its shape (an id alone is one too, lacking its result; with params it
      // is a request lacking its method, answered -32600),
      // whatever else is wrong with it: never answered (JSON-RPC answers requests only; a peer
      // would take an error for id 1 as the answer to its own request 1), and taken without
      // "jsonrpc" as vscode-jsonrpc takes it.
      if (fields.jsonrpc !== "2.0") this.#lenientResponse(fields.jsonrpc, id);
      this.#response(fields, id);
      return;
    }
    if (fields.jsonrpc !== "2.0") {
      this.#invalid(
        validId(id),
        `"jsonrpc" is ${shown(fields.jsonrpc)}, not "2.0"`,
        batch,
      );
      return;
    }
    if (method === undefined) {
      this.#invalid(validId(id), "neither a method, a result nor an error", batch);
      return;
    }
    const params = fields.params;
    if (typeof method !== "string") {
      this.#invalid(validId(id), "the method is not a string", batch);
      return;
    }
    if (params !== undefined && (typeof params !== "object" || params === null)) {
      this.#invalid(validId(id), "params are neither an object nor an array", batch);
      return;
    }
    if (hasId) {
      if (typeof id !== "number" && typeof id !== "string") {
        this.#invalid(null, `the id ${shown(id)} is neither a number nor a string`, batch);
        return;
      }
      if (typeof id === "number" && !exactId(id)) {
        // Answered under it, the id would not be the one the peer sent (1e400 as null,
        // 12345678901234567890 as 12345678901234567000).
        this.#invalid(null, `an id that is not a number this side holds exactly (${id})`, batch);
        return;
      }
      this.#request(id, method, params, batch);
    } else {
      this.#notification(method, params);
    }
  }

  #request(id: JsonRpcId, method: string, params: unknown, batch: Batch | undefined): void {
    if (this.#closing) {
      this.#refuse(id, -32603, "The connection is closing", batch);
      return;
    }
    if (this.outbox.peerHandle(id) !== undefined) {
      this.#invalid(id, `the id ${shown(id)} of a request still in flight`, batch);
      return;
    }
    const handle = this.outbox.peerRequest(id, batch);
    const headers = this.#rpc.dialect.meta
      ? headersIn((params as { _meta?: unknown } | undefined)?._meta)
      : undefined;
    this.#incoming.onCall(handle, method, params, 0, false, headers && { headers });
  }

  #notification(method: string, params: unknown): void {
    const dialect = this.#rpc.dialect;
    const progress = method === dialect.progress.method;
    if (progress) {
      const token = dialect.progress.token(params);
      const partial = token === undefined ? undefined : this.outbox.partialHandle(token);
      // A part of a call cancelled and not yet answered crossed the cancel: dropped.
      if (partial !== undefined && this.outbox.isCancelled(partial)) return;
      if (partial !== undefined) {
        // A partial result (LSP): an item of the call's result stream. Cost 0: JSON-RPC has
        // no credit to grant, the server sends at its own pace.
        this.#outgoing.onResultItem(partial, dialect.progress.value(params), 0);
        return;
      }
      const handle = token === undefined ? undefined : this.outbox.progressHandle(token);
      if (handle !== undefined) {
        this.#outgoing.onProgress(handle, dialect.progress.value(params));
        return;
      }
    } else if (method === dialect.cancel.method) {
      const id = dialect.cancel.id(params);
      const handle = id === undefined ? undefined : this.outbox.peerHandle(id);
      if (handle !== undefined) {
        this.#incoming.onCancel(handle, dialect.cancel.reason(params), false);
      }
      return;
    }
    if (this.#closing) return;
    const rpc = this.#rpc;
    if (rpc.serves === undefined || rpc.serves(method)) {
      this.#incoming.onNotify(method, params);
      return;
    }
    // Progress no call of this side owns (one that ended as it crossed, a token the peer made
    // up) is the dialect's own notification, never "unhandled": dropped without a handler.
    if (!progress) rpc.onUnhandledNotification?.(method, params);
  }

  #response(fields: Record<string, unknown>, id: unknown): void {
    const hasResult = "result" in fields;
    // `"error": null` beside a result says "no error", as JSON-RPC 1.0 peers write it.
    const hasError = fields.error !== undefined && !(fields.error === null && hasResult);
    // Read before takeAwaited, which forgets the call.
    const partials = this.outbox.hasPartials(id);
    if (!this.outbox.takeAwaited(id)) {
      if (this.outbox.takeCancelled(id)) return;
      if (id === null && hasError) {
        this.#report(`The peer could not read a message: ${shown(fields.error)}`);
      } else if (!hasResult && !hasError) {
        this.#report(
          `A message with the id ${shown(id)} and neither a method, a result nor an ` +
            `error, not answered: the peer would take an answer for the one to its own request`,
        );
      } else {
        this.#report(`A response for id ${shown(id)}, which no request in flight has`);
      }
      return;
    }
    if (hasError) this.#outgoing.onCallError(id, fields.error);
    else if (!hasResult) this.#outgoing.onCallError(id, NO_RESULT);
    else if (partials) {
      // The final result of a call with partial results is its stream's last item.
      this.#outgoing.onResultItem(id, fields.result, 0);
      this.#outgoing.onResultEnd(id);
    } else this.#outgoing.onResult(id, fields.result);
  }

  /** Says once per connection that the peer's responses lack `"jsonrpc":"2.0"`. */
  #lenientResponse(version: unknown, id: unknown): void {
    if (this.#lenient) return;
    this.#lenient = true;
    this.#report(
      `A response whose "jsonrpc" is ${version === undefined ? "missing" : shown(version)}, ` +
        `not "2.0" (id ${shown(id)}): taken as vscode-jsonrpc takes it; further ones on this ` +
        `connection are not reported`,
    );
  }

  #invalid(id: JsonRpcId | null, why: string, batch: Batch | undefined): void {
    if (id === null && this.#rpc.role === "client") {
      this.#report(`An invalid request: ${why}; not answered: this side is the client (role)`);
      return;
    }
    this.#report(`An invalid request: ${why}`);
    this.#refuse(id, INVALID_REQUEST, `Invalid Request: ${why}`, batch);
  }

  /** Answers a message that was no call with an error of this wire's own (see onRefused). */
  #refuse(id: JsonRpcId | null, code: number, message: string, batch: Batch | undefined): void {
    this.outbox.errorResponse(id, code, message, batch);
    this.#incoming.onRefused();
  }

  #report(message: string, cause?: unknown): void {
    try {
      this.#rpc.onProtocolError(new ProtocolError(message, { cause }));
    } catch {
      // A failing reporter must not take the connection down.
    }
  }
}

/**
 * NDJSON's lines, limited by the channel's `maxFrameBytes` (and named so), where input that
 * ends inside a line is a `TruncatedFrameError` as with Content-Length: the bytes after the
 * last newline are a message cut short (the MCP SDKs never read them either).
 */
class NdjsonLines implements PushDecoder {
  readonly #lines: LineSplitter;
  /** The bytes of the line the input ended in, if it ended inside one. */
  #cut: number | undefined;

  constructor(maxFrameBytes: number) {
    this.#lines = new LineSplitter(maxFrameBytes, "maxFrameBytes");
  }

  push(chunk: Uint8Array, out: FrameQueue): void {
    this.#lines.push(chunk, out);
  }

  end(_out: FrameQueue): void {
    this.#lines.end(this);
    // At least its newline is missing.
    if (this.#cut === undefined) return;
    throw new TruncatedFrameError(1, `inside a line of ${this.#cut} bytes, before its newline`);
  }

  /** Takes the last line, when the input ended inside it. */
  enqueue(line: Uint8Array): void {
    this.#cut = line.length;
  }
}

/** Where {@linkcode NdjsonLines} puts whole lines (framing's FrameSink). */
interface FrameQueue {
  enqueue(frame: Uint8Array): void;
}

/** What a response to this side's call with neither a result nor an error rejects it with. */
const NO_RESULT = Object.freeze({
  code: -32603,
  message: "A JSON-RPC response with neither a result nor an error",
});

/** How long the end of a child's output waits for its exit status. */
const EXIT_WAIT_MS = 500;

/** Resolves with null once `promise` settled or `ms` passed, whichever is first. */
function waitFor(promise: Promise<void>, ms: number): Promise<null> {
  return within(promise, ms, undefined).then(() => null);
}

/** The most characters of a value the peer sent that a message quotes. */
const MAX_SHOWN_CHARS = 200;

/**
 * A value the peer sent, as JSON cut short, for an error message: quoted whole, a value as
 * long as the frame would come back in the answer (over the peer's limit) and in each report.
 * What JSON leaves as it is (U+2028, bidi overrides, C1 controls) is escaped too, for logs.
 */
function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return printable(text.length <= MAX_SHOWN_CHARS ? text : `${text.slice(0, MAX_SHOWN_CHARS)}…`);
}

function validId(id: unknown): JsonRpcId | null {
  return typeof id === "string" || (typeof id === "number" && exactId(id)) ? id : null;
}

/**
 * Whether a number id reads back as it was sent: finite, and an integer only within the
 * safe range (a larger one was rounded as it was parsed).
 */
function exactId(id: number): boolean {
  return Number.isFinite(id) && (!Number.isInteger(id) || Number.isSafeInteger(id));
}

/**
 * Reads the transport without its stream where it can (`readChunk`: no stream machinery
 * between the pipe and the parse loop, and the transport's own read buffer), else through its
 * reader. Over `readChunk` the transport's owner ends a pending read by closing it.
 */
function chunkReader(transport: Transport): ChunkReader {
  if (transport.readChunk !== undefined) {
    return { readBytes: () => transport.readChunk!(), cancel: () => Promise.resolve() };
  }
  const reader = transport.readable.getReader();
  return {
    readBytes: () => reader.read().then((result) => result.done ? null : result.value),
    cancel: (reason?: unknown) => reader.cancel(reason),
  };
}

/** A child process transport's exit `status` (a promise); anything else for other transports. */
function childStatus(transport: Transport): unknown {
  return (transport as { status?: unknown }).status;
}
