// JSON-RPC 2.0's write side behind the engine's seam (_wire.ts), and the ids of both
// directions: this side's requests go out with the engine's handles as their ids; the peer's
// requests, whose ids are numbers or strings, get the next handle and keep their own id for
// the answer, which is forgotten with the handle once answered. Answers to the requests of a
// batch are held until the whole batch is answered and leave as one array; an answer that
// would take the array past maxFrameBytes is replaced by a short error. An error answer longer
// than maxFrameBytes leaves with its message cut and without its data.

import { WriterOutbox } from "../codec_slots.ts";
import { FrameTooLargeError } from "../../errors.ts";
import type { FrameWriter } from "../../framing/frame_writer.ts";
import type { JsonRpcDialect, JsonRpcId } from "./dialect.ts";
import type { CallMeta } from "../../protocol/format.ts";
import { REQUEST_CANCELLED } from "./error_codes.ts";
import type { CodecSlot, EngineError, Outbox } from "../types.ts";
import { jsonText } from "../../codecs/json.ts";
import { fittedText, utf8Length } from "../../_utf8.ts";

/** JSON-RPC's reserved error codes. */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

const ENGINE_CODES: Readonly<Record<string, number>> = {
  method_not_found: METHOD_NOT_FOUND,
  invalid_param: INVALID_PARAMS,
  cancelled: REQUEST_CANCELLED,
};

/** How many cancelled requests' late answers are recognised (and dropped quietly). */
const MAX_CANCELLED = 1024;

const utf8 = new TextEncoder();
const text = new TextDecoder();
const CLOSE_BRACE = utf8.encode("}");

/** What the outbox needs of its wire. */
export interface JsonRpcOutboxOptions {
  readonly dialect: JsonRpcDialect;
  /** The largest message written (the peer's limit is unknown: ours is assumed). */
  readonly maxFrameBytes: number;
  readonly trustPeer: boolean;
  /** Let JSON change values it cannot hold (a Map as `{}`), instead of a `CodecError`. */
  readonly lossy: boolean;
  readonly onWriteError: (error: unknown) => void;
  /** This side closes: the wire reports the implied goodbye of the peer. */
  readonly onGoodbye: () => void;
  /** Sees each message written (the wire trace), when the channel traces. */
  readonly onFrame?: ((out: boolean, frame: Uint8Array) => void) | undefined;
}

/** The answers of one received batch. */
export class Batch {
  open = 0;
  sealed = false;
  /** UTF-8 bytes of the array written so far: brackets, parts and commas. */
  bytes = 2;
  readonly parts: string[] = [];
}

/** The requests and notifications of a batch this side sends, and how deep its nesting is. */
class OutgoingBatch {
  depth = 0;
  readonly messages: Uint8Array[] = [];
}

/** JSON-RPC's {@linkcode Outbox}, and the ids of calls in both directions. */
export class JsonRpcOutbox extends WriterOutbox implements Outbox {
  readonly streams: undefined = undefined;
  readonly #options: JsonRpcOutboxOptions;
  readonly #methodHeads = new Map<string, string>();
  /** The peer's requests in flight: handle → its id, and its id (typed) → handle. */
  readonly #peerIds = new Map<number, JsonRpcId>();
  readonly #peerHandles = new Map<string, number>();
  readonly #batches = new Map<number, Batch>();
  #lastPeerHandle = 0;
  /** This side's requests whose answer is still awaited. */
  readonly #awaited = new Set<number>();
  /**
   * This side's latest requests cancelled unanswered: an answer that crossed the cancel (MCP)
   * or that answers it (LSP's -32800) is dropped without a word. The engine forgets a
   * cancelled call at once (JsonRpcWire.answersCancelled), so a server that never answers one
   * holds no call slot. Bounded: the oldest is forgotten first.
   */
  readonly #cancelled = new Set<number>();
  /** Progress tokens of this side's requests. */
  readonly #tokens = new TokenLinks();
  #nextToken = 0;
  /** Partial result tokens of this side's requests (LSP), keyed typed (`idKey`). */
  readonly #partials = new TokenLinks();
  /** The batch being sent, while one is (see sendBatch). */
  #sending: OutgoingBatch | undefined;

  constructor(writer: FrameWriter, options: JsonRpcOutboxOptions) {
    super(writer, options);
    this.#options = options;
  }

  // ---------------------------------------------------------------- the ids, for the wire

  /** Gives the peer's request `id` the next handle; `batch` when it came in one. */
  peerRequest(id: JsonRpcId, batch: Batch | undefined): number {
    const handle = ++this.#lastPeerHandle;
    this.#peerIds.set(handle, id);
    this.#peerHandles.set(idKey(id), handle);
    if (batch !== undefined) {
      batch.open++;
      this.#batches.set(handle, batch);
    }
    return handle;
  }

  /** The handle of the peer's request `id` in flight, if any. */
  peerHandle(id: JsonRpcId): number | undefined {
    return this.#peerHandles.get(idKey(id));
  }

  /** Whether this side still awaits an answer to request `id`; forgets it if so. */
  takeAwaited(id: unknown): id is number {
    if (typeof id !== "number" || !this.#awaited.delete(id)) return false;
    this.#dropToken(id);
    return true;
  }

  /** Whether `id` is one of this side's requests cancelled unanswered; forgets it if so. */
  takeCancelled(id: unknown): boolean {
    if (typeof id !== "number" || !this.#cancelled.delete(id)) return false;
    this.#dropToken(id);
    return true;
  }

  /** Whether request `id` was cancelled and its answer has not come (see takeCancelled). */
  isCancelled(id: number): boolean {
    return this.#cancelled.has(id);
  }

  /** The handle whose progress `token` reports, if any. */
  progressHandle(token: JsonRpcId): number | undefined {
    return typeof token === "string" ? this.#tokens.handleOf(token) : undefined;
  }

  /** The handle whose partial results `token` carries, if any. */
  partialHandle(token: JsonRpcId): number | undefined {
    return this.#partials.handleOf(idKey(token));
  }

  /** Whether request `id` asked for partial results (its answer ends its result stream). */
  hasPartials(id: unknown): boolean {
    return typeof id === "number" && this.#partials.has(id);
  }

  /** Starts collecting the answers of a received batch. */
  openBatch(): Batch {
    return new Batch();
  }

  /** The batch is read: its answers leave once every request in it is answered. */
  sealBatch(batch: Batch): void {
    batch.sealed = true;
    this.#flushBatch(batch);
  }

  /** Answers a message that is no valid request with an error (id null when unknown). */
  errorResponse(id: JsonRpcId | null, code: number, message: string, batch?: Batch): void {
    const text = this.#errorText(id, { code, message });
    if (batch !== undefined) this.#collect(batch, id, text);
    else this.#writeText(text);
  }

  // ---------------------------------------------------------------- batches this side sends

  /**
   * Runs `send`; the requests and notifications written meanwhile leave as one batch array
   * when it returns (or throws), in arrays of at most maxFrameBytes when they are more.
   * Nested, the outer batch takes the inner one's.
   */
  sendBatch<T>(send: () => T): T {
    const batch = this.#sending ??= new OutgoingBatch();
    batch.depth++;
    try {
      return send();
    } finally {
      if (--batch.depth === 0) {
        this.#sending = undefined;
        this.#writeBatches(batch.messages);
      }
    }
  }

  #writeBatches(messages: Uint8Array[]): void {
    const max = this.#options.maxFrameBytes;
    let start = 0;
    while (start < messages.length) {
      let end = start;
      let size = 1;
      while (end < messages.length && (end === start || size + messages[end].length + 1 <= max)) {
        size += messages[end++].length + 1;
      }
      const array = new Uint8Array(size);
      let offset = 0;
      for (let i = start; i < end; i++) {
        array[offset++] = i === start ? OPEN_BRACKET : COMMA;
        array.set(messages[i], offset);
        offset += messages[i].length;
      }
      array[offset] = CLOSE_BRACKET;
      this.writeParts(array, EMPTY);
      start = end;
    }
  }

  // ---------------------------------------------------------------- calls this side starts

  callParam(
    method: string,
    _slot: CodecSlot,
    value: unknown,
    _waits: boolean,
    progress: boolean,
  ): Uint8Array {
    let token: string | undefined;
    if (progress) {
      token = `conduit-${++this.#nextToken}`;
      value = this.#options.dialect.progress.withToken(value, token);
    }
    const partial = this.#options.dialect.progress.partialTokenOf?.(value);
    if (partial !== undefined && this.#partials.taken(idKey(partial))) {
      throw new TypeError(
        `The partialResultToken ${JSON.stringify(partial)} of "${method}" is already the ` +
          `token of a call in flight or waiting to be sent: give each call its own`,
      );
    }
    const body = value === undefined
      ? CLOSE_BRACE
      : utf8.encode(`,"params":${stringifyParams(value, this.#options.lossy)}}`);
    this.#checkSize(body.length + 64);
    if (token !== undefined) this.#tokens.pend(body, token);
    if (partial !== undefined) this.#partials.pend(body, idKey(partial));
    return body;
  }

  dropCallParam(body: Uint8Array): void {
    this.#tokens.unpend(body);
    this.#partials.unpend(body);
  }

  sendCall(
    id: number,
    method: string,
    _streamParam: boolean,
    _timeoutMs: number,
    body: Uint8Array,
    _value?: unknown,
    meta?: CallMeta,
  ): undefined {
    this.#awaited.add(id);
    this.#tokens.bind(body, id);
    this.#partials.bind(body, id);
    if (meta?.headers !== undefined && this.#options.dialect.meta) {
      body = withMetaHeaders(body, meta.headers);
    }
    let head = this.#methodHeads.get(method);
    if (head === undefined) {
      head = `{"jsonrpc":"2.0","method":${JSON.stringify(method)},"id":`;
      if (this.#methodHeads.size < 1024) this.#methodHeads.set(method, head);
    }
    const start = utf8.encode(head + id);
    if (this.#sending !== undefined) this.#sending.messages.push(concat(start, body));
    else this.writeParts(start, body);
    return undefined;
  }

  sendCancel(id: number, reason: string): void {
    const cancel = this.#options.dialect.cancel;
    // A reason too long for the peer's limit is cut, as a conduit CANCEL's is: a cancel that
    // threw would do so in the caller's abort listener.
    const max = this.#options.maxFrameBytes;
    const fits = (words: string) =>
      utf8Length(`{"jsonrpc":"2.0","method":${JSON.stringify(cancel.method)},"params":`) +
          utf8Length(stringifyParams(cancel.param(id, words), this.#options.lossy)) + 1 <= max;
    const words = fits(reason) ? reason : fittedText(reason, "…", fits, max);
    this.#notifyValue(cancel.method, cancel.param(id, words));
    if (!this.#awaited.delete(id)) return;
    // Where the cancelled request is still answered (LSP), its tokens stay its own until then:
    // parts and progress that crossed the cancel are dropped, not taken for a later call's or
    // handed to a handler of the progress method.
    if (!cancel.answered) this.#dropToken(id);
    if (this.#cancelled.size === MAX_CANCELLED) {
      const oldest = this.#cancelled.values().next().value!;
      this.#cancelled.delete(oldest);
      this.#dropToken(oldest);
    }
    this.#cancelled.add(id);
  }

  sendNotify(method: string, _slot: CodecSlot, value: unknown): void {
    this.#notifyValue(method, value);
  }

  // ---------------------------------------------------------------- calls the peer starts

  sendResult(id: number, method: string, _slot: CodecSlot, value: unknown): void {
    const json = value === undefined ? "null" : jsonText(value, this.#options.lossy);
    const bytes = this.#bytesOver(json, this.#options.maxFrameBytes - 64);
    if (bytes !== undefined) {
      this.sendCallFailure(id, {
        name: "FrameTooLargeError",
        message: `The result of "${method}" (${bytes} bytes) exceeds maxFrameBytes ` +
          `(${this.#options.maxFrameBytes})`,
        code: "frame_too_large",
      });
      return;
    }
    this.#answer(id, `,"result":${json}}`);
  }

  sendResultError(id: number, error: unknown): void {
    this.#answer(id, this.#errorObject(error));
  }

  sendCallFailure(id: number, error: EngineError): void {
    if (error.code === "cancelled" && !this.#options.dialect.cancel.answered) {
      // Not answered (MCP): the caller forgot the request already.
      const batch = this.#forgetPeer(id);
      if (batch !== undefined) {
        batch.open--;
        this.#flushBatch(batch);
      }
      return;
    }
    const code = ENGINE_CODES[error.code] ?? INTERNAL_ERROR;
    this.#answer(id, {
      code,
      message: error.message,
      data: { name: error.name, code: error.code },
    });
  }

  // ---------------------------------------------------------------- the connection

  sendGoodbye(code?: string): void {
    // JSON-RPC has no goodbye: closing gracefully is waiting for the calls in flight.
    if (code === undefined) queueMicrotask(this.#options.onGoodbye);
  }

  sendPing(): void {}

  // ---------------------------------------------------------------- helpers

  #notifyValue(method: string, value: unknown): void {
    const params = value === undefined
      ? ""
      : `,"params":${stringifyParams(value, this.#options.lossy)}`;
    const text = `{"jsonrpc":"2.0","method":${JSON.stringify(method)}${params}}`;
    const bytes = this.#bytesOver(text, this.#options.maxFrameBytes);
    if (bytes !== undefined) throw new FrameTooLargeError(bytes, this.#options.maxFrameBytes);
    if (this.#sending !== undefined) this.#sending.messages.push(utf8.encode(text));
    else this.#writeText(text);
  }

  /**
   * Writes the answer to the peer's request `handle`: `answer` is the text that follows its id,
   * or the error it is answered with.
   */
  #answer(handle: number, answer: string | ErrorObject): void {
    const id = this.#peerIds.get(handle);
    if (id === undefined) return;
    // Made before the request is forgotten: an error whose data JSON cannot hold (a BigInt)
    // throws here, and the engine answers again with one it can.
    const text = typeof answer === "string"
      ? `{"jsonrpc":"2.0","id":${JSON.stringify(id)}${answer}`
      : this.#errorText(id, answer);
    const batch = this.#forgetPeer(handle);
    if (batch === undefined) {
      this.#writeText(text);
      return;
    }
    this.#collect(batch, id, text);
    batch.open--;
    this.#flushBatch(batch);
  }

  /** Forgets the peer's request `handle`; returns its batch, if any. */
  #forgetPeer(handle: number): Batch | undefined {
    const id = this.#peerIds.get(handle);
    if (id === undefined) return undefined;
    this.#peerIds.delete(handle);
    this.#peerHandles.delete(idKey(id));
    const batch = this.#batches.get(handle);
    if (batch !== undefined) this.#batches.delete(handle);
    return batch;
  }

  /**
   * Adds the answer `text` to request `id` to `batch`, or a short error in its place when it
   * would make the batch's array longer than maxFrameBytes (the peer's limit is unknown: ours
   * is assumed). So a batch holds at most maxFrameBytes of answers and a short error for each
   * request past them (go-ethereum bounds a batch's response the same way); those errors may
   * take the array a little past the limit.
   */
  #collect(batch: Batch, id: JsonRpcId | null, text: string): void {
    const max = this.#options.maxFrameBytes;
    let bytes = utf8Length(text);
    if (batch.bytes + bytes + 1 > max) {
      const error = {
        code: INTERNAL_ERROR,
        message: `The answer (${bytes} bytes) would take the batch's answer past ` +
          `maxFrameBytes (${max})`,
      };
      text = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"error":${JSON.stringify(error)}}`;
      bytes = utf8Length(text);
    }
    batch.bytes += bytes + 1;
    batch.parts.push(text);
  }

  #flushBatch(batch: Batch): void {
    if (!batch.sealed || batch.open > 0 || batch.parts.length === 0) return;
    this.#writeText(`[${batch.parts.join(",")}]`);
    batch.parts.length = 0;
  }

  #dropToken(id: number): void {
    this.#tokens.drop(id);
    this.#partials.drop(id);
  }

  /**
   * The error answer to request `id`. Past maxFrameBytes (a handler's long message, an engine
   * message quoting a long method name) its message is cut and its data left out, so that a
   * peer with the same limit reads it instead of ending the connection over it.
   */
  #errorText(id: JsonRpcId | null, error: ErrorObject): string {
    const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"error":`;
    const text = `${head}${JSON.stringify(error)}}`;
    const max = this.#options.maxFrameBytes;
    const bytes = this.#bytesOver(text, max);
    if (bytes === undefined) return text;
    const mark = `… (cut: the answer took ${bytes} bytes, over maxFrameBytes (${max}))`;
    const cut = (message: string) => `${head}${JSON.stringify({ code: error.code, message })}}`;
    // The longest start in whole code points that fits, mark and escapes included.
    const fits = (candidate: string) =>
      candidate.length - mark.length <= MAX_CUT_MESSAGE_CHARS && utf8Length(cut(candidate)) <= max;
    const message = String(error.message);
    // Whole when its data alone was too long.
    if (fits(message + mark)) return cut(message + mark);
    return cut(fittedText(message, mark, fits, MAX_CUT_MESSAGE_CHARS) || mark);
  }

  #errorObject(error: unknown): ErrorObject {
    if (!(error instanceof Error)) return { code: INTERNAL_ERROR, message: String(error) };
    const fields = error as Error & { code?: unknown; data?: unknown };
    const code = typeof fields.code === "number" && Number.isInteger(fields.code)
      ? fields.code
      : INTERNAL_ERROR;
    let data = fields.data;
    if (data === undefined && typeof fields.code === "string") {
      data = { name: error.name, code: fields.code };
    }
    if (this.#options.trustPeer && error.stack !== undefined) {
      data = {
        ...(typeof data === "object" && data !== null ? data : { value: data }),
        stack: error.stack,
      };
    }
    return data === undefined
      ? { code, message: error.message }
      : { code, message: error.message, data };
  }

  #checkSize(size: number): void {
    const max = this.#options.maxFrameBytes;
    if (size > max) throw new FrameTooLargeError(size, max);
  }

  /** `text`'s UTF-8 length when it is over `max` bytes, else undefined (counted only then). */
  #bytesOver(text: string, max: number): number | undefined {
    // A UTF-16 unit is at most 3 bytes of UTF-8.
    if (text.length * 3 <= max) return undefined;
    const bytes = utf8Length(text);
    return bytes > max ? bytes : undefined;
  }

  #writeText(text: string): void {
    this.writeParts(utf8.encode(text), EMPTY);
  }
}

/** A JSON-RPC error object. */
interface ErrorObject {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/** The most characters of an error message kept when its answer is cut to maxFrameBytes. */
const MAX_CUT_MESSAGE_CHARS = 1024;

const EMPTY = new Uint8Array(0);
const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;
const CLOSE_BRACKET = 0x5d;

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const joined = new Uint8Array(a.length + b.length);
  joined.set(a);
  joined.set(b, a.length);
  return joined;
}

/** Distinguishes the number 1 from the string "1". */
function idKey(id: JsonRpcId): string {
  return typeof id === "number" ? `n${id}` : `s${id}`;
}

function stringifyParams(value: unknown, lossy: boolean): string {
  if (typeof value !== "object" || value === null) {
    throw new TypeError(
      `JSON-RPC params are an object (by name) or an array (by position), got ${
        value === null ? "null" : typeof value
      }`,
    );
  }
  return jsonText(value, lossy);
}

/**
 * Tokens that name this side's requests (progress, partial results): each is chosen when the
 * param is encoded (`pend`, keyed by the param's bytes), tied to the request's handle when it is
 * sent (`bind`), and dropped with the request.
 */
class TokenLinks {
  readonly #handles = new Map<string, number>();
  readonly #tokenOf = new Map<number, string>();
  readonly #pending = new WeakMap<Uint8Array, string>();
  /** The tokens of calls encoded and not yet sent (or dropped). */
  readonly #waiting = new Set<string>();

  pend(body: Uint8Array, token: string): void {
    this.#pending.set(body, token);
    this.#waiting.add(token);
  }

  /** The call encoded as `body` ends unsent: its token is free again. */
  unpend(body: Uint8Array): void {
    const token = this.#pending.get(body);
    if (token === undefined) return;
    this.#pending.delete(body);
    this.#waiting.delete(token);
  }

  bind(body: Uint8Array, handle: number): void {
    const token = this.#pending.get(body);
    if (token === undefined) return;
    this.#pending.delete(body);
    this.#waiting.delete(token);
    this.#handles.set(token, handle);
    this.#tokenOf.set(handle, token);
  }

  handleOf(token: string): number | undefined {
    return this.#handles.get(token);
  }

  /** Whether `token` is a call's, in flight or waiting to be sent. */
  taken(token: string): boolean {
    return this.#handles.has(token) || this.#waiting.has(token);
  }

  has(handle: number): boolean {
    return this.#tokenOf.has(handle);
  }

  drop(handle: number): void {
    const token = this.#tokenOf.get(handle);
    if (token === undefined) return;
    this.#tokenOf.delete(handle);
    this.#handles.delete(token);
  }
}

const PARAMS_OBJECT = utf8.encode(',"params":{');

/**
 * `body` (`,"params":{…}}` or `}`) with `headers` as members of the params' `_meta`, before its
 * own (a progress token, the caller's): as it is when its params are not an object (by
 * position), or have a `_meta` that is not one.
 */
function withMetaHeaders(body: Uint8Array, headers: Readonly<Record<string, string>>): Uint8Array {
  const meta = JSON.stringify(headers);
  if (meta === "{}") return body;
  if (body.length === 1) return utf8.encode(`,"params":{"_meta":${meta}}}`);
  for (let i = 0; i < PARAMS_OBJECT.length; i++) if (body[i] !== PARAMS_OBJECT[i]) return body;
  const rest = text.decode(body.subarray(PARAMS_OBJECT.length));
  if (!rest.includes('"_meta"')) {
    return utf8.encode(`,"params":{"_meta":${meta}${rest.startsWith("}") ? "" : ","}${rest}`);
  }
  // "_meta" somewhere: the params' own member, or a value or a key deeper down. The params
  // were written by this side's JSON codec, so they read back as they were.
  const params = JSON.parse(`{${rest.slice(0, -1)}`) as Record<string, unknown>;
  const own = params._meta;
  if (own === undefined) return utf8.encode(`,"params":{"_meta":${meta},${rest}`);
  if (typeof own !== "object" || own === null || Array.isArray(own)) return body;
  params._meta = { ...headers, ...own };
  return utf8.encode(`,"params":${JSON.stringify(params)}}`);
}
