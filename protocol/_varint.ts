// Unsigned LEB128 varints as the protocol defines them (docs/protocol.md §3): minimal on write;
// on read at most 8 bytes, minimal, and at most 2^53 - 1.

import { MAX_VARINT_BYTES } from "./limits.ts";

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
