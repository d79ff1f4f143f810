// Handing bytes over to the channel instead of lending them.

import { markTransfer } from "./_transfer_marks.ts";

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
