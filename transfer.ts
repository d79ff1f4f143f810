// Handing bytes over to the channel instead of lending them.

/**
 * Gives up the memory of `bytes` to conduit, so that sending them costs no copy. Pass the
 * result where a raw value goes: a call's param, a handler's result, a notification's param or
 * a stream item (the raw codec, or any `Uint8Array` a codec passes through as it is).
 *
 * Without it, the channel treats such bytes as lent: a handler's result or a notification's
 * param larger than a write batch (64 KiB) is copied, since you may change it as soon as the
 * handler returned; a call's param is not copied, and the call settles only once it is
 * written. With it, the channel owns `bytes` from then on: it writes them as they are and
 * settles without waiting for the write, a thread transport moves their buffer to the other
 * thread when they span all of it (the bytes then read as empty here), and bytes that are a
 * frame this channel received (a param or result of 64 KiB or more, which has a buffer of
 * its own) are taken back once written, for a later frame of the same size to be read into
 * instead of a fresh buffer, as `Channel.recycle` does. So an echo handler that
 * returns `transfer(param)` neither copies nor allocates.
 *
 * Do not read, change or send again `bytes` after this call. A value received from a channel
 * may be given up (it is a view of memory the channel no longer writes); bytes that span the
 * whole of their buffer give up that buffer, which a thread transport may move away.
 *
 * `@conduit/ipc/transports/web_worker` and `@conduit/ipc/transports/shared_ring` export this
 * same function: written straight to a thread transport, a chunk that spans the whole of a
 * buffer given up is moved to the other thread instead of copied.
 *
 * @param bytes Bytes to send once; conduit's from now on.
 * @returns `bytes`, for use inline.
 * @throws {TypeError} When `bytes` is not a `Uint8Array`.
 *
 * @example An echo that neither copies nor allocates
 * ```ts
 * import { openChannel, transfer } from "@conduit/ipc/channel";
 * import { rawCodec } from "@conduit/ipc/codecs/raw";
 * import { connectUnix, listenUnix } from "@conduit/ipc/transports/unix";
 * import assert from "node:assert/strict";
 *
 * const handlers = { echo: (bytes: Uint8Array): Uint8Array => transfer(bytes) };
 * const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
 * const listener = await listenUnix(`${dir}/s`);
 * const accepted = listener.accept();
 * const connected = await connectUnix(`${dir}/s`);
 * const [client, server] = await Promise.all([
 *   openChannel<typeof handlers>(connected, { codec: rawCodec() }),
 *   openChannel(await accepted, { codec: rawCodec(), handlers }),
 * ]);
 *
 * const blob = new Uint8Array(1024 * 1024);
 * for (let i = 0; i < 4; i++) {
 *   const echoed = await client.remote.echo(blob.fill(i)); // blob is lent: unchanged
 *   assert.ok(echoed.length === blob.length && echoed.every((byte) => byte === i));
 *   client.recycle(echoed); // the client reads the next result into this memory
 * }
 * await Promise.all([client.close(), server.closed, listener.close()]);
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @example Moving a buffer to another thread
 * ```ts
 * import { messagePortTransport, transfer } from "@conduit/ipc/transports/web_worker";
 * import assert from "node:assert/strict";
 *
 * const { port1, port2 } = new MessageChannel();
 * const a = messagePortTransport(port1);
 * const b = messagePortTransport(port2);
 * const bytes = new Uint8Array(1024 * 1024).fill(7);
 * const writer = a.writable.getWriter();
 * await writer.write(transfer(bytes));
 * assert.equal(bytes.length, 0); // moved, not copied
 * const { value } = await b.readable.getReader().read();
 * assert.equal(value?.length, 1024 * 1024);
 * writer.releaseLock();
 * await Promise.all([a.close(), b.close()]);
 * ```
 */
export function transfer(bytes: Uint8Array): Uint8Array {
  return markTransfer(bytes);
}

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
  // Given up twice, the same memory would be written twice while the first write hands it
  // back (or moves it away): the second frame would go out empty, or cut the stream of
  // frames short. Bytes whose buffer is detached read as empty: they were given up before.
  const buffer = bytes.buffer;
  if (givenViews.has(bytes) || (buffer instanceof ArrayBuffer && buffer.detached)) {
    throw new TypeError(
      "transfer() of bytes already given up: they are not yours to send again",
    );
  }
  if (buffer instanceof ArrayBuffer && !buffer.resizable) given.add(buffer);
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
