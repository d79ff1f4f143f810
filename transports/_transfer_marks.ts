// Which buffers a writer gave up, so a thread transport may transfer them instead of copying.
// One WeakSet for the Web Worker transport and the shared ring, so `transfer()` from either
// entrypoint marks for both.

const given = new WeakSet<ArrayBufferLike>();

/** Marks the buffer under `bytes` as given up; returns `bytes`. */
export function markTransfer(bytes: Uint8Array): Uint8Array {
  if (!(bytes instanceof Uint8Array)) {
    throw new TypeError(`transfer() takes a Uint8Array, got ${typeof bytes}`);
  }
  if (bytes.buffer instanceof ArrayBuffer && !bytes.buffer.resizable) given.add(bytes.buffer);
  return bytes;
}

/**
 * The message that carries `chunk` to another context, and what to transfer with it: the
 * chunk itself when it was given up and spans its whole buffer (no copy), else an exact copy
 * (one copy, where a structured clone of the view would copy its whole buffer).
 */
export function outgoing(chunk: Uint8Array): { message: Uint8Array; buffer: ArrayBuffer } {
  const buffer = chunk.buffer;
  if (
    given.has(buffer) && chunk.byteOffset === 0 && chunk.byteLength === buffer.byteLength
  ) {
    given.delete(buffer);
    return { message: chunk, buffer: buffer as ArrayBuffer };
  }
  const copy = chunk.slice();
  return { message: copy, buffer: copy.buffer };
}
