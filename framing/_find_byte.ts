// Byte search for the line framings. Reading four bytes per step with a zero-byte test beats
// `Uint8Array.prototype.indexOf` once the range is long enough to amortize the word view
// (`deno bench -A bench/framing_bench.ts`, the `ndjson/decode-stream` cases).

const WORD_SCAN_MIN = 256;

/** The index of the first `byte` in `bytes` at or after `from`, or -1. */
export function findByte(bytes: Uint8Array, byte: number, from = 0): number {
  const length = bytes.length;
  if (length - from < WORD_SCAN_MIN) return bytes.indexOf(byte, from);
  let i = from;
  // Walk bytes up to a 4-byte boundary of the underlying buffer.
  for (; ((bytes.byteOffset + i) & 3) !== 0; i++) {
    if (bytes[i] === byte) return i;
  }
  const count = (length - i) >>> 2;
  const words = new Uint32Array(bytes.buffer, bytes.byteOffset + i, count);
  const pattern = byte * 0x0101_0101;
  for (let k = 0; k < count; k++) {
    const x = words[k] ^ pattern;
    // Non-zero exactly when some byte of x is zero, that is when some byte equals `byte`.
    if (((x - 0x0101_0101) & ~x & 0x8080_8080) !== 0) {
      return bytes.indexOf(byte, i + k * 4);
    }
  }
  return bytes.indexOf(byte, i + count * 4);
}
