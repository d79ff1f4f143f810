// Helpers shared by the framing tests.

import fc from "fast-check";

/** Payloads of 0 to `max` bytes, biased towards small ones. */
export function payloadArb(max = 300): fc.Arbitrary<Uint8Array> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.uint8Array({ maxLength: 40 }) },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: max }) },
    { weight: 1, arbitrary: fc.constant(new Uint8Array(0)) },
  );
}

/**
 * Cut points for re-chunking `length` bytes: sorted offsets strictly inside the buffer, plus
 * a bias towards 1-byte chunks.
 */
export function chunkingArb(): fc.Arbitrary<(bytes: Uint8Array) => Uint8Array[]> {
  return fc.oneof(
    fc.constant((bytes: Uint8Array) => [bytes]),
    fc.constant((bytes: Uint8Array) => Array.from(bytes, (_, i) => bytes.subarray(i, i + 1))),
    fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 30 }).map(
      (cuts) => (bytes: Uint8Array) => {
        const offsets = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))]
          .sort((a, b) => a - b);
        const chunks: Uint8Array[] = [];
        let start = 0;
        for (const offset of offsets) {
          chunks.push(bytes.subarray(start, offset));
          start = offset;
        }
        chunks.push(bytes.subarray(start));
        return chunks;
      },
    ),
    fc.integer({ min: 1, max: 17 }).map((size) => (bytes: Uint8Array) => {
      const chunks: Uint8Array[] = [];
      for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
      return chunks;
    }),
  );
}

/** Concatenates byte arrays into one. */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** Reads a stream to its end, returning its chunks. */
export function collect<T>(readable: ReadableStream<T>): Promise<T[]> {
  return Array.fromAsync(readable);
}

/** Copies each array so that deepEqual compares contents, not views of different sizes. */
export function copies(arrays: readonly Uint8Array[]): Uint8Array[] {
  return arrays.map((a) => a.slice());
}

/** Runs `fn` and returns what it threw; fails if it returned normally. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected the function to throw");
}

/** Payload `i` of `size` bytes: a pattern that differs from one payload to the next. */
export function pattern(i: number, size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let j = 0; j < size; j++) bytes[j] = patternByte(i, j);
  return bytes;
}

/** Whether `bytes` is exactly `pattern(i, size)`, checked without allocating. */
export function holdsPattern(bytes: Uint8Array, i: number, size: number): boolean {
  if (bytes.length !== size) return false;
  for (let j = 0; j < size; j++) {
    if (bytes[j] !== patternByte(i, j)) return false;
  }
  return true;
}

function patternByte(i: number, j: number): number {
  return (i * 131 + j * 7 + (j >>> 8)) & 0xff;
}
