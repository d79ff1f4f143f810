// What `transfer()` (transfer.ts) marks as given up: the very view, so that a channel
// keeps it without a copy, and its buffer, so that a thread transport moves the buffer instead
// of copying it.

/** Buffers given up: a thread transport may transfer them. */
const given = new WeakSet<ArrayBufferLike>();
/**
 * The very views given up: a channel takes over a value only if it is one of these, so a mark
 * left on a buffer that other views share (a received frame is a view of a read buffer) never
 * makes it skip the copy of another view of it.
 */
const givenViews = new WeakSet<Uint8Array>();

/** Marks the buffer under `bytes` as given up; returns `bytes`. */
export function markTransfer(bytes: Uint8Array): Uint8Array {
  if (!(bytes instanceof Uint8Array)) {
    throw new TypeError(`transfer() takes a Uint8Array, got ${typeof bytes}`);
  }
  if (bytes.buffer instanceof ArrayBuffer && !bytes.buffer.resizable) given.add(bytes.buffer);
  givenViews.add(bytes);
  return bytes;
}

/** Whether `bytes` itself was given up with `transfer()` and not yet taken. */
export function isGivenUp(bytes: Uint8Array): boolean {
  return givenViews.has(bytes);
}

/**
 * Forgets that `bytes` itself was given up (the channel is done with it). The mark on its
 * buffer stays for a thread transport, which may take the chunk after its write resolved
 * (and drops the mark as it transfers the buffer).
 */
export function forgetGivenUp(bytes: Uint8Array): void {
  givenViews.delete(bytes);
}

/**
 * Below this a chunk is cloned rather than transferred: posting a small message with a
 * transfer list took longer per round trip than cloning it (bench/report/_threads.ts, small
 * call p50).
 */
const CLONE_MAX_BYTES = 64 * 1024;

const NO_TRANSFER: Transferable[] = [];

/**
 * The message that carries `chunk` to another context, and what to transfer with it: the
 * chunk itself when it was given up and spans its whole buffer (no copy); else, for a small
 * chunk, a clone of its exact bytes; else an exact copy, transferred (one copy, where a
 * structured clone of a view would copy its whole buffer).
 */
export function outgoing(chunk: Uint8Array): { message: Uint8Array; transfer: Transferable[] } {
  const buffer = chunk.buffer;
  const whole = chunk.byteOffset === 0 && chunk.byteLength === buffer.byteLength;
  if (whole && given.has(buffer)) {
    given.delete(buffer);
    return { message: chunk, transfer: [buffer as ArrayBuffer] };
  }
  if (chunk.length < CLONE_MAX_BYTES) {
    // A clone copies the view's whole buffer: clone the chunk only when that is all of it.
    return {
      message: whole && buffer instanceof ArrayBuffer ? chunk : chunk.slice(),
      transfer: NO_TRANSFER,
    };
  }
  const copy = chunk.slice();
  return { message: copy, transfer: [copy.buffer] };
}

/**
 * Puts a received `chunk` into `view` for a `readInto`: when the chunk is exactly the size of
 * `view`, which is the whole of its buffer (a large frame's body read into the frame's own
 * buffer), `view`'s buffer is detached and the chunk returned instead, as a BYOB read's
 * transfer would, so nothing is copied; else the bytes that fit are copied and the rest is
 * returned, to be read next.
 */
export function fillOrSwap(
  view: Uint8Array,
  chunk: Uint8Array,
): { read: Uint8Array; rest: Uint8Array | undefined } {
  const target = view.buffer;
  if (
    view.byteOffset === 0 && chunk.byteOffset === 0 && chunk.length === view.length &&
    target.byteLength === view.length && chunk.buffer.byteLength === chunk.length &&
    target instanceof ArrayBuffer && !target.resizable
  ) {
    target.transfer(0);
    return { read: chunk, rest: undefined };
  }
  const used = Math.min(view.length, chunk.length);
  view.set(used === chunk.length ? chunk : chunk.subarray(0, used));
  const rest = used < chunk.length ? chunk.subarray(used) : undefined;
  return { read: view.subarray(0, used), rest };
}
