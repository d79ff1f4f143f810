// Fast encoders of whole frames: one exactly-sized allocation per frame. Internal: a peer
// implementer uses encodeEnvelope.

import { varintSize, writeVarint } from "./_varint.ts";
import { FRAME_KINDS } from "./frame_kinds.ts";

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
