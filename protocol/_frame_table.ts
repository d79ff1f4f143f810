// The one table from type byte to reader (docs/protocol.md §4). Every reader of conduit frames
// goes through it: decodeEnvelope (building an Envelope) and the channel's reader (dispatching
// the fields to the engine, building nothing). A reader parses and checks the whole frame
// before it calls the sink, so a sink never sees half a frame, and a malformed frame throws
// ProtocolError naming what is wrong.

import { AUTH_KIND } from "./format.ts";
import { CALL_FLAG_META, MAX_CALL_META_BYTES } from "./format.ts";
import { CALL_FLAG_STREAM_PARAM, describeType, FRAME_KINDS, R_FLAG } from "./format.ts";
import { MAX_METHOD_BYTES, MAX_VARINT_BYTES } from "./format.ts";
import { ProtocolError } from "./format.ts";
import { fittedText } from "../_utf8.ts";

/**
 * What a frame means, one method per frame kind and R flag. Bodies are views into the frame,
 * or the frame's tail when it was read split (see {@linkcode readFrame}); `frameBytes` is the
 * whole frame payload's length (a stream item's credit cost).
 */
export interface FrameSink {
  onHello(body: Uint8Array): void;
  onGoodbye(body: Uint8Array): void;
  onPing(nonce: number): void;
  onPong(nonce: number): void;
  /**
   * A SHAPE frame of `count` keys, before they are read: throws when no such definition may
   * follow (the feature not negotiated, too many keys), so that a hostile count costs nothing.
   */
  onShapeHead(id: number, count: number): void;
  /** The same frame's longest key, before any key is decoded: throws when it is too long. */
  onShapeKeyBytes(id: number, count: number, longestKeyBytes: number): void;
  /** SHAPE: the definition of the sender's record shape `id` (docs/protocol.md §14). */
  onShape(id: number, keys: string[]): void;
  onCall(
    id: number,
    flags: number,
    timeoutMs: number,
    method: string,
    body: Uint8Array,
    meta: Uint8Array | undefined,
  ): void;
  onNotify(method: string, body: Uint8Array): void;
  /** RESULT(R=1). */
  onResult(id: number, body: Uint8Array): void;
  /** ERROR(R=1): the terminal error of a call this side started. */
  onCallError(id: number, body: Uint8Array): void;
  /** ERROR(R=0): the caller's param stream failed. */
  onParamError(id: number, body: Uint8Array): void;
  /** CANCEL(R=0): the caller cancels a call this side serves. */
  onCancel(id: number, body: Uint8Array): void;
  /** CANCEL(R=1): the handler stopped reading this side's param stream. */
  onParamCancel(id: number, body: Uint8Array): void;
  /** DATA(R=1). */
  onResultItem(id: number, body: Uint8Array, frameBytes: number): void;
  /** DATA(R=0). */
  onParamItem(id: number, body: Uint8Array, frameBytes: number): void;
  /** END(R=1). */
  onResultEnd(id: number): void;
  /** END(R=0). */
  onParamEnd(id: number): void;
  /** CREDIT(R=1): credit for this side's param stream. */
  onParamCredit(id: number, bytes: number): void;
  /** CREDIT(R=0): credit for this side's result stream. */
  onResultCredit(id: number, bytes: number): void;
}

/**
 * The state {@linkcode readFrame} reads with: the cursor its field readers share and,
 * optionally, the recent method names, matched by their bytes so a frequent method's name is not decoded
 * per frame.
 */
export class FrameParser {
  readonly cursor: Cursor = new Cursor();
  readonly names: MethodNames | undefined;

  constructor(names?: MethodNames) {
    this.names = names;
  }
}

/** How many incoming method names are matched without decoding them. */
const RECENT_METHODS = 8;

/** The method names of recent frames, with their bytes. */
export class MethodNames {
  readonly #recent: Array<{ bytes: Uint8Array; name: string }> = [];
  #next = 0;

  /** The recent name whose UTF-8 bytes are `frame[start, end)`, if any. */
  find(frame: Uint8Array, start: number, end: number): string | undefined {
    const length = end - start;
    search: for (const recent of this.#recent) {
      const bytes = recent.bytes;
      if (bytes.length !== length) continue;
      for (let i = 0; i < length; i++) if (frame[start + i] !== bytes[i]) continue search;
      return recent.name;
    }
    return undefined;
  }

  /** Remembers a name just decoded from `frame[start, end)`. */
  remember(name: string, frame: Uint8Array, start: number, end: number): void {
    const recent = { bytes: frame.slice(start, end), name };
    if (this.#recent.length < RECENT_METHODS) this.#recent.push(recent);
    else this.#recent[this.#next++ % RECENT_METHODS] = recent;
  }
}

const utf8Text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

// What each type byte is: an operation of FrameParser.read. A switch over these small numbers
// compiles to a jump table of direct calls, where a table of reader functions would make
// every frame an indirect call that the compiler cannot inline.
const UNKNOWN_KIND = 0;
const R_NOT_ALLOWED = 1;
const RESULT_WITHOUT_R = 2;
const HELLO = 3;
const GOODBYE = 4;
const PING = 5;
const PONG = 6;
const CALL = 7;
const NOTIFY = 8;
const RESULT = 9;
const CALL_ERROR = 10;
const PARAM_ERROR = 11;
const CANCEL = 12;
const PARAM_CANCEL = 13;
const RESULT_ITEM = 14;
const PARAM_ITEM = 15;
const RESULT_END = 16;
const PARAM_END = 17;
const PARAM_CREDIT = 18;
const RESULT_CREDIT = 19;
const LATE_AUTH = 20;
const SHAPE = 21;

/** The one table: type byte to operation. */
const TABLE: Uint8Array = (() => {
  const table = new Uint8Array(256);
  const r = R_FLAG;
  const ops: Array<[number, number]> = [
    [FRAME_KINDS.hello, HELLO],
    [FRAME_KINDS.goodbye, GOODBYE],
    [FRAME_KINDS.ping, PING],
    [FRAME_KINDS.pong, PONG],
    [FRAME_KINDS.shape, SHAPE],
    [FRAME_KINDS.call, CALL],
    [FRAME_KINDS.notify, NOTIFY],
    [FRAME_KINDS.result, RESULT_WITHOUT_R],
    [FRAME_KINDS.result | r, RESULT],
    [FRAME_KINDS.error, PARAM_ERROR],
    [FRAME_KINDS.error | r, CALL_ERROR],
    [FRAME_KINDS.cancel, CANCEL],
    [FRAME_KINDS.cancel | r, PARAM_CANCEL],
    [FRAME_KINDS.data, PARAM_ITEM],
    [FRAME_KINDS.data | r, RESULT_ITEM],
    [FRAME_KINDS.end, PARAM_END],
    [FRAME_KINDS.end | r, RESULT_END],
    [FRAME_KINDS.credit, RESULT_CREDIT],
    [FRAME_KINDS.credit | r, PARAM_CREDIT],
  ];
  for (const [type, op] of ops) table[type] = op;
  // AUTH (docs/protocol.md §5.1) is read by the handshake only, never through this table.
  table[AUTH_KIND] = LATE_AUTH;
  // A kind that exists without the R flag only.
  for (const [type] of ops) if (table[type | r] === UNKNOWN_KIND) table[type | r] = R_NOT_ALLOWED;
  return table;
})();

/**
 * Parses `frame` through the table and hands its fields to `sink`, with `parser`'s cursor
 * and method names. A frame read split (`FrameDecoder`'s `splitHead`, at
 * {@linkcode bodyStart}) is `frame` followed by `tail`, which is then the body as it is.
 * @throws {ProtocolError}
 */
export function readFrame(
  frame: Uint8Array,
  sink: FrameSink,
  parser: FrameParser,
  tail?: Uint8Array,
): void {
  if (frame.length === 0) throw new ProtocolError("Empty frame: a frame needs a type byte");
  const cursor = parser.cursor;
  const type = frame[0];
  const kind = TABLE[type];
  // Split elsewhere than at the body of a data frame (not where bodyStart() would): joined.
  if (tail !== undefined && (!hasBody(kind) || bodyStart(frame) === undefined)) {
    return readFrame(joined(frame, tail), sink, parser);
  }
  switch (kind) {
    case RESULT: {
      const id = idField(frame, cursor);
      return sink.onResult(id, bodyAt(frame, cursor.end, tail));
    }
    case CALL:
      return readCall(frame, sink, parser, tail);
    case NOTIFY: {
      const method = methodField(frame, 1, parser);
      return sink.onNotify(method, bodyAt(frame, cursor.end, tail));
    }
    case RESULT_ITEM: {
      const id = idField(frame, cursor);
      return sink.onResultItem(id, bodyAt(frame, cursor.end, tail), bytesOf(frame, tail));
    }
    case PARAM_ITEM: {
      const id = idField(frame, cursor);
      return sink.onParamItem(id, bodyAt(frame, cursor.end, tail), bytesOf(frame, tail));
    }
    case PARAM_CREDIT: {
      const id = idField(frame, cursor);
      return sink.onParamCredit(id, creditField(frame, id, cursor));
    }
    case RESULT_CREDIT: {
      const id = idField(frame, cursor);
      return sink.onResultCredit(id, creditField(frame, id, cursor));
    }
    case CALL_ERROR: {
      const id = idField(frame, cursor);
      return sink.onCallError(id, frame.subarray(cursor.end));
    }
    case PARAM_ERROR: {
      const id = idField(frame, cursor);
      return sink.onParamError(id, frame.subarray(cursor.end));
    }
    case CANCEL: {
      const id = idField(frame, cursor);
      return sink.onCancel(id, frame.subarray(cursor.end));
    }
    case PARAM_CANCEL: {
      const id = idField(frame, cursor);
      return sink.onParamCancel(id, frame.subarray(cursor.end));
    }
    case RESULT_END:
      return sink.onResultEnd(endField(frame, cursor));
    case PARAM_END:
      return sink.onParamEnd(endField(frame, cursor));
    case HELLO:
      return sink.onHello(frame.subarray(1));
    case GOODBYE:
      return sink.onGoodbye(frame.subarray(1));
    case PING:
      return sink.onPing(nonceField(frame, cursor));
    case PONG:
      return sink.onPong(nonceField(frame, cursor));
    case SHAPE:
      return readShape(frame, sink, cursor);
    case RESULT_WITHOUT_R:
      throw new ProtocolError("RESULT frame without the R flag");
    case R_NOT_ALLOWED:
      throw new ProtocolError(`${describeType(type)}: this kind does not allow the R flag`);
    case LATE_AUTH:
      throw new ProtocolError("An AUTH after the handshake (AUTH belongs to the handshake only)");
    default:
      throw new ProtocolError(`Unknown frame kind 0x${(type & 0x7f).toString(16)}`);
  }
}

/**
 * A SHAPE frame: `varint id, varint count`, then `count` keys, each `varint length` and that
 * many bytes of UTF-8, and nothing after. Checked before anything is allocated: a count or a
 * length that overruns the frame is a ProtocolError, and the sink sees the count before the
 * keys' lengths are read (onShapeHead), and the longest before any key is decoded
 * (onShapeKeyBytes). The table's own limits are the receiver's to check (ShapeDecoder).
 */
function readShape(frame: Uint8Array, sink: FrameSink, cursor: Cursor): void {
  const id = field(frame, 1, "shape id", cursor);
  const count = field(frame, cursor.end, "key count", cursor);
  let at = cursor.end;
  // Each key takes at least its length byte.
  if (count > frame.length - at) {
    throw new ProtocolError(`SHAPE ${id} says ${count} keys, more than its frame holds`);
  }
  sink.onShapeHead(id, count);
  // The keys' lengths first, so that the sink's limits are checked before a key is decoded.
  const keysAt = at;
  let longest = 0;
  for (let i = 0; i < count; i++) {
    const length = field(frame, at, "key length", cursor);
    at = cursor.end + length;
    if (at > frame.length) {
      throw new ProtocolError(`SHAPE ${id} key ${i} of ${length} bytes overruns the frame`);
    }
    if (length > longest) longest = length;
  }
  noBody(frame, at);
  sink.onShapeKeyBytes(id, count, longest);
  const keys = new Array<string>(count);
  at = keysAt;
  for (let i = 0; i < count; i++) {
    const length = field(frame, at, "key length", cursor);
    const end = cursor.end + length;
    try {
      keys[i] = utf8Text.decode(frame.subarray(cursor.end, end));
    } catch {
      throw new ProtocolError(`SHAPE ${id} key ${i} is not valid UTF-8`);
    }
    at = end;
  }
  sink.onShape(id, keys);
}

/**
 * The SHAPE frame (type byte and fields) of shape `id` with `keys`, each well-formed.
 */
export function encodeShape(id: number, keys: readonly string[]): Uint8Array {
  const encoded = keys.map((key) => utf8.encode(key));
  let size = 1 + varintSize(id) + varintSize(keys.length);
  for (const key of encoded) size += varintSize(key.length) + key.length;
  const frame = new Uint8Array(size);
  frame[0] = FRAME_KINDS.shape;
  let at = writeVarint(frame, 1, id);
  at = writeVarint(frame, at, keys.length);
  for (const key of encoded) {
    at = writeVarint(frame, at, key.length);
    frame.set(key, at);
    at += key.length;
  }
  return frame;
}

/** Whether a split frame's tail may be the body of a frame of `kind`: one that carries data. */
function hasBody(kind: number): boolean {
  return kind === CALL || kind === NOTIFY || kind === RESULT || kind === RESULT_ITEM ||
    kind === PARAM_ITEM;
}

/** The body after `end`: the tail, when the frame was read split there. */
function bodyAt(frame: Uint8Array, end: number, tail: Uint8Array | undefined): Uint8Array {
  if (tail === undefined) return frame.subarray(end);
  return end === frame.length ? tail : joined(frame.subarray(end), tail);
}

function bytesOf(frame: Uint8Array, tail: Uint8Array | undefined): number {
  return frame.length + (tail?.length ?? 0);
}

/** A frame's two parts joined (copied), for one split elsewhere than at its body. */
function joined(head: Uint8Array, tail: Uint8Array): Uint8Array {
  const whole = new Uint8Array(head.length + tail.length);
  whole.set(head);
  whole.set(tail, head.length);
  return whole;
}

/**
 * Where the body of a data frame (CALL, NOTIFY, RESULT, DATA) begins, given the frame's first
 * bytes `start`: the length of its envelope, or `undefined` for another kind, a malformed
 * envelope (readFrame() reports it), or one that `start` does not hold whole. What the channel
 * splits large frames at, so that their body is read into a buffer of its own.
 */
export function bodyStart(start: Uint8Array): number | undefined {
  if (start.length === 0) return undefined;
  const cursor = new Cursor();
  const kind = TABLE[start[0]];
  if (!hasBody(kind)) return undefined;
  let end = 1;
  // The varints after the type byte: id (not NOTIFY), then flags and timeoutMs (CALL).
  const varints = kind === NOTIFY ? 0 : kind === CALL ? 3 : 1;
  let flags = 0;
  for (let i = 0; i < varints; i++) {
    const value = readVarint(start, end, cursor);
    if (cursor.end < 0) return undefined;
    if (i === 1) flags = value;
    end = cursor.end;
  }
  if (kind === CALL || kind === NOTIFY) {
    const length = readVarint(start, end, cursor);
    if (cursor.end < 0) return undefined;
    end = cursor.end + length;
  }
  if (kind === CALL && (flags & CALL_FLAG_META) !== 0) {
    // The meta follows the method: its length varint, then its bytes.
    if (end > start.length) return undefined;
    const length = readVarint(start, end, cursor);
    if (cursor.end < 0) return undefined;
    end = cursor.end + length;
  }
  return end <= start.length ? end : undefined;
}

function readCall(
  frame: Uint8Array,
  sink: FrameSink,
  parser: FrameParser,
  tail: Uint8Array | undefined,
): void {
  const cursor = parser.cursor;
  const id = idField(frame, cursor);
  const flags = field(frame, cursor.end, "flags", cursor);
  if ((flags & ~(CALL_FLAG_STREAM_PARAM | CALL_FLAG_META)) !== 0) {
    throw new ProtocolError(`CALL ${id} has unknown flags 0x${flags.toString(16)}`);
  }
  const timeoutMs = field(frame, cursor.end, "timeoutMs", cursor);
  const method = methodField(frame, cursor.end, parser);
  const meta = (flags & CALL_FLAG_META) === 0 ? undefined : metaField(frame, id, cursor);
  const body = bodyAt(frame, cursor.end, tail);
  if ((flags & CALL_FLAG_STREAM_PARAM) !== 0 && body.length > 0) {
    throw new ProtocolError(`CALL ${id} has STREAM_PARAM and a ${body.length}-byte body`);
  }
  sink.onCall(id, flags, timeoutMs, method, body, meta);
}

/** A CALL's meta, its length varint at `cursor.end`; `cursor.end` is then after it. */
function metaField(frame: Uint8Array, id: number, cursor: Cursor): Uint8Array {
  const length = field(frame, cursor.end, "metaLength", cursor);
  const start = cursor.end;
  if (length < 1 || length > MAX_CALL_META_BYTES) {
    throw new ProtocolError(
      `CALL ${id} has meta of ${length} bytes (must be 1 to ${MAX_CALL_META_BYTES})`,
    );
  }
  if (start + length > frame.length) {
    throw new ProtocolError(`CALL ${id} has meta of ${length} bytes, overrunning the frame`);
  }
  cursor.end = start + length;
  return frame.subarray(start, start + length);
}

function field(frame: Uint8Array, offset: number, name: string, cursor: Cursor): number {
  const value = readVarint(frame, offset, cursor);
  if (cursor.end < 0) {
    throw new ProtocolError(
      `${describeType(frame[0])} field ${name}: ${varintProblem(cursor.end)}`,
    );
  }
  return value;
}

/** The id right after the type byte; `cursor.end` is then the offset after it. */
function idField(frame: Uint8Array, cursor: Cursor): number {
  const id = field(frame, 1, "id", cursor);
  if (id === 0) throw new ProtocolError(`${describeType(frame[0])} has id 0`);
  return id;
}

function nonceField(frame: Uint8Array, cursor: Cursor): number {
  const nonce = field(frame, 1, "nonce", cursor);
  noBody(frame, cursor.end);
  return nonce;
}

function endField(frame: Uint8Array, cursor: Cursor): number {
  const id = idField(frame, cursor);
  noBody(frame, cursor.end);
  return id;
}

function creditField(frame: Uint8Array, id: number, cursor: Cursor): number {
  const bytes = field(frame, cursor.end, "bytes", cursor);
  if (bytes === 0) throw new ProtocolError(`CREDIT for stream ${id} grants 0 bytes`);
  noBody(frame, cursor.end);
  return bytes;
}

function noBody(frame: Uint8Array, end: number): void {
  if (end !== frame.length) {
    throw new ProtocolError(
      `${describeType(frame[0])} has ${frame.length - end} unexpected trailing byte(s)`,
    );
  }
}

/** The method name whose length varint is at `offset`; `cursor.end` is then after the name. */
function methodField(frame: Uint8Array, offset: number, parser: FrameParser): string {
  const cursor = parser.cursor;
  const length = field(frame, offset, "methodLength", cursor);
  const start = cursor.end;
  if (length === 0 || length > MAX_METHOD_BYTES) {
    throw new ProtocolError(
      `${describeType(frame[0])} method of ${length} bytes (must be 1 to ${MAX_METHOD_BYTES})`,
    );
  }
  const end = start + length;
  if (end > frame.length) {
    throw new ProtocolError(
      `${describeType(frame[0])} method of ${length} bytes overruns the frame`,
    );
  }
  cursor.end = end;
  const names = parser.names;
  if (names === undefined) return decodeMethod(frame, start, end);
  let name = names.find(frame, start, end);
  if (name === undefined) {
    name = decodeMethod(frame, start, end);
    names.remember(name, frame, start, end);
  }
  return name;
}

function decodeMethod(frame: Uint8Array, start: number, end: number): string {
  // Method names are short and nearly always ASCII: skip TextDecoder for them.
  if (end - start <= 64) {
    let name = "";
    for (let i = start; i < end; i++) {
      const byte = frame[i];
      if (byte >= 0x80) return decodeUtf8Method(frame, start, end);
      name += String.fromCharCode(byte);
    }
    return name;
  }
  return decodeUtf8Method(frame, start, end);
}

function decodeUtf8Method(frame: Uint8Array, start: number, end: number): string {
  try {
    return utf8Text.decode(frame.subarray(start, end));
  } catch {
    throw new ProtocolError(`${describeType(frame[0])} method name is not valid UTF-8`);
  }
}

// Unsigned LEB128 varints as the protocol defines them (docs/protocol.md §3): minimal on write;
// on read at most 8 bytes, minimal, and at most 2^53 - 1.
/** Bytes `value` takes as a varint. `value` must be an integer in [0, 2^53 - 1]. */
export function varintSize(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x20_0000) return 3;
  if (value < 0x1000_0000) return 4;
  let size = 4;
  let rest = Math.floor(value / 0x1000_0000);
  while (rest > 0) {
    size++;
    rest = Math.floor(rest / 0x80);
  }
  return size;
}

/** Writes `value` at `offset` and returns the offset after it. */
export function writeVarint(bytes: Uint8Array, offset: number, value: number): number {
  if (value < 0x8000_0000) {
    while (value >= 0x80) {
      bytes[offset++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    bytes[offset++] = value;
    return offset;
  }
  while (value >= 0x80) {
    bytes[offset++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  bytes[offset++] = value;
  return offset;
}

/**
 * Where a read stopped: {@linkcode readVarint}'s second result. Each reader owns one and
 * reuses it, so reading allocates nothing.
 */
export class Cursor {
  /** The offset after the last varint read, or a negative `VARINT_*` code. */
  end = 0;
}

/** Varint failure: the frame ended inside the varint. */
export const VARINT_TRUNCATED = -1;
/** Varint failure: more than {@linkcode MAX_VARINT_BYTES} bytes. */
export const VARINT_TOO_LONG = -2;
/** Varint failure: a multi-byte varint whose last byte is 0. */
export const VARINT_NOT_MINIMAL = -3;
/** Varint failure: the value exceeds 2^53 - 1. */
export const VARINT_TOO_BIG = -4;

/**
 * Reads a varint at `offset`. Returns its value and sets `cursor.end` to the offset after it,
 * or to a negative `VARINT_*` code (the returned value is then meaningless).
 */
export function readVarint(bytes: Uint8Array, offset: number, cursor: Cursor): number {
  const length = bytes.length;
  if (offset < length) {
    const first = bytes[offset];
    if (first < 0x80) {
      cursor.end = offset + 1;
      return first;
    }
  }
  let value = 0;
  let scale = 1;
  for (let i = 0; i < MAX_VARINT_BYTES; i++) {
    if (offset + i >= length) {
      cursor.end = VARINT_TRUNCATED;
      return 0;
    }
    const byte = bytes[offset + i];
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) {
      if (byte === 0 && i > 0) {
        cursor.end = VARINT_NOT_MINIMAL;
        return 0;
      }
      if (value > Number.MAX_SAFE_INTEGER) {
        cursor.end = VARINT_TOO_BIG;
        return 0;
      }
      cursor.end = offset + i + 1;
      return value;
    }
    scale *= 0x80;
  }
  cursor.end = VARINT_TOO_LONG;
  return 0;
}

/** Describes a negative `Cursor.end` code. */
export function varintProblem(code: number): string {
  switch (code) {
    case VARINT_TRUNCATED:
      return "the frame ends inside a varint";
    case VARINT_TOO_LONG:
      return `a varint is longer than ${MAX_VARINT_BYTES} bytes`;
    case VARINT_NOT_MINIMAL:
      return "a varint is not minimally encoded";
    default:
      return `a varint exceeds ${Number.MAX_SAFE_INTEGER}`;
  }
}

// JSON bodies of control frames (HELLO, GOODBYE, CANCEL).
const utf8 = new TextEncoder();
// Fatal: a body that is not UTF-8 is not JSON text (docs/protocol.md §5 check 1), nor is one
// behind a byte order mark (kept, so JSON.parse refuses it).
const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The JSON value of a UTF-8 body, or undefined when it is not JSON. */
export function parseJson(body: Uint8Array): unknown {
  try {
    return JSON.parse(text.decode(body));
  } catch {
    return undefined;
  }
}

/** What a CANCEL(R=0) body says: why, and whether it was the caller's deadline. */
export interface CancelReason {
  readonly reason: string | undefined;
  readonly code: unknown;
}

const NO_REASON: CancelReason = { reason: undefined, code: undefined };

/** Reads a CANCEL body (docs/protocol.md §6): JSON `{ reason, code }`, or empty. */
export function parseCancel(body: Uint8Array): CancelReason {
  if (body.length === 0) return NO_REASON;
  const parsed = parseJson(body) as { reason?: unknown; code?: unknown } | undefined;
  return {
    reason: typeof parsed?.reason === "string" ? parsed.reason : undefined,
    code: parsed?.code,
  };
}

/**
 * The CANCEL(R=0) body for `reason` and `code`, at most `room` bytes: a reason too long for it
 * is shortened like an ERROR's message (docs/protocol.md §8).
 */
export function cancelBody(
  reason: string,
  code: string | undefined,
  room: number = Infinity,
): Uint8Array {
  const body = utf8.encode(JSON.stringify({ reason, code }));
  if (body.length <= room) return body;
  const fits = (candidate: string) =>
    utf8.encode(JSON.stringify({ reason: candidate, code })).length <= room;
  return utf8.encode(JSON.stringify({ reason: fittedText(reason, "…", fits, room), code }));
}

// Fast encoders of whole frames: one exactly-sized allocation per frame. Internal: a peer
// implementer uses encodeEnvelope.
/** Encodes a frame of a type byte followed by a body (HELLO, GOODBYE). */
export function encodeBodyFrame(type: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(1 + body.length);
  out[0] = type;
  out.set(body, 1);
  return out;
}

/** Encodes a type byte, one varint (an id or a nonce) and a body. */
export function encodeIdFrame(type: number, id: number, body: Uint8Array): Uint8Array {
  const head = 1 + varintSize(id);
  const out = new Uint8Array(head + body.length);
  out[0] = type;
  writeVarint(out, 1, id);
  if (body.length > 0) out.set(body, head);
  return out;
}

/** Encodes CREDIT with the given type byte (R flag included). */
export function encodeCredit(type: number, id: number, bytes: number): Uint8Array {
  const out = new Uint8Array(1 + varintSize(id) + varintSize(bytes));
  out[0] = type;
  writeVarint(out, writeVarint(out, 1, id), bytes);
  return out;
}

/** Encodes CALL; `method` is the UTF-8 method name, `meta` the call's meta when it has one. */
export function encodeCall(
  id: number,
  flags: number,
  timeoutMs: number,
  method: Uint8Array,
  body: Uint8Array,
  meta?: Uint8Array,
): Uint8Array {
  const head = callHeadSize(id, flags, timeoutMs, method, meta);
  const out = new Uint8Array(head + body.length);
  writeCallHead(out, id, flags, timeoutMs, method, meta);
  if (body.length > 0) out.set(body, head);
  return out;
}

/** The length of a CALL's head (everything before its body). */
export function callHeadSize(
  id: number,
  flags: number,
  timeoutMs: number,
  method: Uint8Array,
  meta?: Uint8Array,
): number {
  return 1 + varintSize(id) + varintSize(flags) + varintSize(timeoutMs) +
    varintSize(method.length) + method.length +
    (meta === undefined ? 0 : varintSize(meta.length) + meta.length);
}

/** Writes a CALL's head at the start of `out`; returns where its body begins. */
export function writeCallHead(
  out: Uint8Array,
  id: number,
  flags: number,
  timeoutMs: number,
  method: Uint8Array,
  meta?: Uint8Array,
): number {
  out[0] = FRAME_KINDS.call;
  let offset = writeVarint(out, 1, id);
  offset = writeVarint(out, offset, flags);
  offset = writeVarint(out, offset, timeoutMs);
  offset = writeVarint(out, offset, method.length);
  out.set(method, offset);
  offset += method.length;
  if (meta === undefined) return offset;
  offset = writeVarint(out, offset, meta.length);
  out.set(meta, offset);
  return offset + meta.length;
}

/** Encodes NOTIFY; `method` is the UTF-8 method name. */
export function encodeNotify(method: Uint8Array, body: Uint8Array): Uint8Array {
  const head = 1 + varintSize(method.length) + method.length;
  const out = new Uint8Array(head + body.length);
  out[0] = FRAME_KINDS.notify;
  out.set(method, writeVarint(out, 1, method.length));
  if (body.length > 0) out.set(body, head);
  return out;
}

/** The payload bytes a DATA frame with this id and body costs in credit. */
export function dataCost(id: number, bodyLength: number): number {
  return 1 + varintSize(id) + bodyLength;
}

// Envelope heads (docs/protocol.md §4): the type byte and varint fields before a frame's body,
// written into one reused scratch buffer. The channel sends them with
// FrameWriter.writeParts(head, body), so a frame costs no buffer of its own: allocating one
// costs far more than the frame's few head bytes (`bench/ab_engine.ts` case `notify`).
/** The longest head: CALL with four maximal varints and the longest method name. */
const MAX_HEAD_BYTES = 1 + 4 * MAX_VARINT_BYTES + MAX_METHOD_BYTES;

/** Writes heads; each returns a view of the scratch buffer, valid until the next call. */
export class EnvelopeHeads {
  readonly #scratch = new Uint8Array(MAX_HEAD_BYTES);
  // One view per head length, made once: a subarray per frame would be the only allocation
  // left on the send path.
  readonly #views: Uint8Array[] = [];

  /** A type byte and one varint: RESULT, ERROR, CANCEL, DATA, END, PING, PONG. */
  id(type: number, id: number): Uint8Array {
    const head = this.#scratch;
    head[0] = type;
    return this.#view(writeVarint(head, 1, id));
  }

  /** A whole CREDIT frame (it has no body). */
  creditHead(type: number, id: number, bytes: number): Uint8Array {
    const head = this.#scratch;
    head[0] = type;
    return this.#view(writeVarint(head, writeVarint(head, 1, id), bytes));
  }

  /** CALL up to its body; `method` is the UTF-8 method name. */
  callHead(id: number, flags: number, timeoutMs: number, method: Uint8Array): Uint8Array {
    const head = this.#scratch;
    head[0] = FRAME_KINDS.call;
    let offset = writeVarint(head, 1, id);
    offset = writeVarint(head, offset, flags);
    offset = writeVarint(head, offset, timeoutMs);
    return this.#view(this.#method(offset, method));
  }

  /** NOTIFY up to its body; `method` is the UTF-8 method name. */
  notifyHead(method: Uint8Array): Uint8Array {
    const head = this.#scratch;
    head[0] = FRAME_KINDS.notify;
    return this.#view(this.#method(1, method));
  }

  #view(length: number): Uint8Array {
    return this.#views[length] ??= this.#scratch.subarray(0, length);
  }

  #method(offset: number, method: Uint8Array): number {
    const head = this.#scratch;
    offset = writeVarint(head, offset, method.length);
    // Method names are short: a loop beats TypedArray#set's fixed cost.
    for (let i = 0; i < method.length; i++) head[offset + i] = method[i];
    return offset + method.length;
  }
}
