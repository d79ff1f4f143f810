// The length-prefix header shared by the frame decoder, encoder and writer.

import { FRAME_HEADER_BYTES } from "./limits.ts";

export { FRAME_HEADER_BYTES };

/** The largest payload a 4-byte header can announce. */
export const MAX_HEADER_LENGTH = 0xffff_ffff;

/** Reads a big-endian uint32 at `offset`. */
export function readLength(bytes: Uint8Array, offset: number): number {
  return ((bytes[offset] << 24) | (bytes[offset + 1] << 16) | (bytes[offset + 2] << 8) |
    bytes[offset + 3]) >>> 0;
}

/** Writes `length` as a big-endian uint32 at `offset`. */
export function writeLength(bytes: Uint8Array, offset: number, length: number): void {
  bytes[offset] = length >>> 24;
  bytes[offset + 1] = (length >>> 16) & 0xff;
  bytes[offset + 2] = (length >>> 8) & 0xff;
  bytes[offset + 3] = length & 0xff;
}
