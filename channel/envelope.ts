/**
 * The conduit envelope: the frame kinds of docs/protocol.md §4 to bytes and back. Pure and
 * synchronous; {@linkcode decodeEnvelope} throws {@linkcode ProtocolError} for anything the
 * protocol forbids, so a peer's bytes never crash the reader.
 *
 * @example
 * ```ts
 * import { decodeEnvelope, encodeEnvelope } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * const bytes = encodeEnvelope({ kind: "credit", id: 7, receiverId: false, bytes: 4096 });
 * assert.deepEqual(bytes, new Uint8Array([0x22, 7, 0x80, 0x20]));
 * assert.deepEqual(decodeEnvelope(bytes), { kind: "credit", id: 7, receiverId: false, bytes: 4096 });
 * ```
 *
 * @module
 */

import { ProtocolError } from "./errors.ts";
import { readVarint, varintEnd, varintProblem, varintSize, writeVarint } from "./_varint.ts";

/** The kind numbers of the frame types (the low 7 bits of the type byte). */
export const FRAME_KINDS = {
  hello: 0x01,
  goodbye: 0x02,
  ping: 0x03,
  pong: 0x04,
  call: 0x10,
  notify: 0x11,
  result: 0x12,
  error: 0x13,
  cancel: 0x14,
  data: 0x20,
  end: 0x21,
  credit: 0x22,
} as const;

/** The name of a frame kind. */
export type FrameKindName = keyof typeof FRAME_KINDS;

/** The R flag of the type byte: the frame's id was allocated by the frame's receiver. */
export const R_FLAG = 0x80;

/** CALL flag bit 0: the param is a stream of DATA(R=0) frames. */
export const CALL_FLAG_STREAM_PARAM = 1;

/** The longest method name, in UTF-8 bytes. */
export const MAX_METHOD_BYTES = 1024;

/** A decoded frame: its kind, its fields, and its body (a view into the frame). */
export type Envelope =
  | { kind: "hello"; body: Uint8Array }
  | { kind: "goodbye"; body: Uint8Array }
  | { kind: "ping"; nonce: number }
  | { kind: "pong"; nonce: number }
  | {
    kind: "call";
    id: number;
    flags: number;
    timeoutMs: number;
    method: string;
    body: Uint8Array;
  }
  | { kind: "notify"; method: string; body: Uint8Array }
  | { kind: "result"; id: number; body: Uint8Array }
  | { kind: "error"; id: number; receiverId: boolean; body: Uint8Array }
  | { kind: "cancel"; id: number; receiverId: boolean; body: Uint8Array }
  | { kind: "data"; id: number; receiverId: boolean; body: Uint8Array }
  | { kind: "end"; id: number; receiverId: boolean }
  | { kind: "credit"; id: number; receiverId: boolean; bytes: number };

const EMPTY = new Uint8Array(0);
const encoder = new TextEncoder();
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Encodes one envelope as a frame payload (without the 4-byte length header, which the
 * framing layer adds).
 *
 * @param envelope The frame to encode.
 * @returns A new buffer holding the frame payload.
 *
 * @example
 * ```ts
 * import { encodeEnvelope } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * const body = new TextEncoder().encode("3");
 * assert.deepEqual(encodeEnvelope({ kind: "result", id: 1, body }), new Uint8Array([0x92, 1, 0x33]));
 * ```
 */
export function encodeEnvelope(envelope: Envelope): Uint8Array {
  switch (envelope.kind) {
    case "hello":
    case "goodbye":
      return encodeBodyFrame(FRAME_KINDS[envelope.kind], envelope.body);
    case "ping":
    case "pong":
      return encodeIdFrame(FRAME_KINDS[envelope.kind], envelope.nonce, EMPTY);
    case "call":
      return encodeCall(
        envelope.id,
        envelope.flags,
        envelope.timeoutMs,
        encoder.encode(envelope.method),
        envelope.body,
      );
    case "notify":
      return encodeNotify(encoder.encode(envelope.method), envelope.body);
    case "result":
      return encodeIdFrame(FRAME_KINDS.result | R_FLAG, envelope.id, envelope.body);
    case "error":
    case "cancel":
    case "data":
      return encodeIdFrame(
        FRAME_KINDS[envelope.kind] | (envelope.receiverId ? R_FLAG : 0),
        envelope.id,
        envelope.body,
      );
    case "end":
      return encodeIdFrame(
        FRAME_KINDS.end | (envelope.receiverId ? R_FLAG : 0),
        envelope.id,
        EMPTY,
      );
    case "credit":
      return encodeCredit(
        FRAME_KINDS.credit | (envelope.receiverId ? R_FLAG : 0),
        envelope.id,
        envelope.bytes,
      );
  }
}

/**
 * Decodes one frame payload into an {@linkcode Envelope}. Bodies are views into `frame`.
 *
 * @param frame One frame payload, as the framing layer returns it.
 * @returns The decoded frame.
 * @throws {ProtocolError} For an empty frame, an unknown kind, an R flag the kind does not
 * allow, a malformed varint, a missing field, trailing bytes where the kind has no body, an
 * invalid method name, an id of 0, or unknown CALL flags.
 *
 * @example
 * ```ts
 * import { decodeEnvelope, ProtocolError } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(decodeEnvelope(new Uint8Array([0xa1, 5])), { kind: "end", id: 5, receiverId: true });
 * assert.throws(() => decodeEnvelope(new Uint8Array([0x7f])), ProtocolError);
 * ```
 */
export function decodeEnvelope(frame: Uint8Array): Envelope {
  if (frame.length === 0) throw new ProtocolError("Empty frame: a frame needs a type byte");
  const type = frame[0];
  const r = type >= R_FLAG;
  switch (type & 0x7f) {
    case FRAME_KINDS.hello:
      noR(type, r);
      return { kind: "hello", body: frame.subarray(1) };
    case FRAME_KINDS.goodbye:
      noR(type, r);
      return { kind: "goodbye", body: frame.subarray(1) };
    case FRAME_KINDS.ping:
    case FRAME_KINDS.pong: {
      noR(type, r);
      const nonce = field(frame, 1, "nonce");
      noBody(frame, varintEnd, type);
      return { kind: type === FRAME_KINDS.ping ? "ping" : "pong", nonce };
    }
    case FRAME_KINDS.call: {
      noR(type, r);
      const id = idField(frame, 1);
      const flags = field(frame, varintEnd, "flags");
      if ((flags & ~CALL_FLAG_STREAM_PARAM) !== 0) {
        throw new ProtocolError(`CALL ${id} has unknown flags 0x${flags.toString(16)}`);
      }
      const timeoutMs = field(frame, varintEnd, "timeoutMs");
      const method = methodField(frame, varintEnd);
      const body = frame.subarray(methodEnd);
      if ((flags & CALL_FLAG_STREAM_PARAM) !== 0 && body.length > 0) {
        throw new ProtocolError(`CALL ${id} has STREAM_PARAM and a ${body.length}-byte body`);
      }
      return { kind: "call", id, flags, timeoutMs, method, body };
    }
    case FRAME_KINDS.notify: {
      noR(type, r);
      const method = methodField(frame, 1);
      return { kind: "notify", method, body: frame.subarray(methodEnd) };
    }
    case FRAME_KINDS.result: {
      if (!r) throw new ProtocolError("RESULT frame without the R flag");
      const id = idField(frame, 1);
      return { kind: "result", id, body: frame.subarray(varintEnd) };
    }
    case FRAME_KINDS.error:
    case FRAME_KINDS.cancel:
    case FRAME_KINDS.data: {
      const id = idField(frame, 1);
      const kind = (type & 0x7f) === FRAME_KINDS.error
        ? "error"
        : (type & 0x7f) === FRAME_KINDS.cancel
        ? "cancel"
        : "data";
      return { kind, id, receiverId: r, body: frame.subarray(varintEnd) };
    }
    case FRAME_KINDS.end: {
      const id = idField(frame, 1);
      noBody(frame, varintEnd, type);
      return { kind: "end", id, receiverId: r };
    }
    case FRAME_KINDS.credit: {
      const id = idField(frame, 1);
      const bytes = field(frame, varintEnd, "bytes");
      if (bytes === 0) throw new ProtocolError(`CREDIT for stream ${id} grants 0 bytes`);
      noBody(frame, varintEnd, type);
      return { kind: "credit", id, receiverId: r, bytes };
    }
    default:
      throw new ProtocolError(`Unknown frame kind 0x${(type & 0x7f).toString(16)}`);
  }
}

/** The name of a type byte's kind, for messages (`"DATA(R=1)"`, `"kind 0x7f"`). */
export function describeType(type: number): string {
  const kind = type & 0x7f;
  for (const [name, value] of Object.entries(FRAME_KINDS)) {
    if (value === kind) return `${name.toUpperCase()}(R=${type >= R_FLAG ? 1 : 0})`;
  }
  return `kind 0x${kind.toString(16)}`;
}

// Fast encoders used by the channel: one exactly-sized allocation per frame.

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

/** Encodes CALL; `method` is the UTF-8 method name. */
export function encodeCall(
  id: number,
  flags: number,
  timeoutMs: number,
  method: Uint8Array,
  body: Uint8Array,
): Uint8Array {
  const head = 1 + varintSize(id) + varintSize(flags) + varintSize(timeoutMs) +
    varintSize(method.length) + method.length;
  const out = new Uint8Array(head + body.length);
  out[0] = FRAME_KINDS.call;
  let offset = writeVarint(out, 1, id);
  offset = writeVarint(out, offset, flags);
  offset = writeVarint(out, offset, timeoutMs);
  offset = writeVarint(out, offset, method.length);
  out.set(method, offset);
  if (body.length > 0) out.set(body, head);
  return out;
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

function noR(type: number, r: boolean): void {
  if (r) throw new ProtocolError(`${describeType(type)}: this kind does not allow the R flag`);
}

function field(frame: Uint8Array, offset: number, name: string): number {
  const value = readVarint(frame, offset);
  if (varintEnd < 0) {
    throw new ProtocolError(
      `${describeType(frame[0])} field ${name}: ${varintProblem(varintEnd)}`,
    );
  }
  return value;
}

function idField(frame: Uint8Array, offset: number): number {
  const id = field(frame, offset, "id");
  if (id === 0) throw new ProtocolError(`${describeType(frame[0])} has id 0`);
  return id;
}

function noBody(frame: Uint8Array, end: number, type: number): void {
  if (end !== frame.length) {
    throw new ProtocolError(
      `${describeType(type)} has ${frame.length - end} unexpected trailing byte(s)`,
    );
  }
}

// Set by methodField: the offset after the method name.
let methodEnd = 0;

function methodField(frame: Uint8Array, offset: number): string {
  const length = field(frame, offset, "methodLength");
  const start = varintEnd;
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
  methodEnd = end;
  return decodeMethod(frame, start, end);
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
    return utf8.decode(frame.subarray(start, end));
  } catch {
    throw new ProtocolError(`${describeType(frame[0])} method name is not valid UTF-8`);
  }
}
