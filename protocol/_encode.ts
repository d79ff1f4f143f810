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
