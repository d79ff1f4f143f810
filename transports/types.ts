/**
 * The transport contract: a pair of byte streams and a way to close them. Every transport
 * (stdio, Unix socket, TCP, TLS, in-memory) implements {@linkcode Transport}; listeners
 * implement {@linkcode Listener}.
 *
 * @module
 */

/**
 * A bidirectional byte channel to one peer.
 *
 * Close semantics, shared by every implementation and checked by one conformance suite:
 * - {@linkcode Transport.close} is graceful: every chunk given to `writable` before the call
 *   is written (awaited or not), then both directions close and every OS resource is
 *   released (for a child process: it has exited). It is idempotent, never rejects, and
 *   resolves once the release is done.
 * - {@linkcode Transport.abort} is abortive: queued writes are dropped and both directions
 *   close at once; local reads and writes then fail with `TransportClosedError` whose `cause`
 *   is the reason. The in-memory peer's `readable` errors; a socket or stdio peer's ends (or
 *   errors with a reset, if it had sent bytes that were never read).
 * - Closing `writable` (`writer.close()`, the end of a `pipeTo`) half-closes: the peer's
 *   `readable` ends after the last byte, and this side can still read. Once both directions
 *   have ended, the transport releases its resources by itself.
 * - After the peer closes, `readable` ends (a read returns `done`); if the connection breaks
 *   instead, `readable` errors with `TransportClosedError`.
 * - A write after `close()` or `abort()` is rejected with `TransportClosedError`. A peer that
 *   dies mid-write makes the write reject with `TransportClosedError` (the OS error is its
 *   `cause`), never hang. A peer that lives but does not read holds writes back, and with
 *   them `close()`'s flush: `abort()` does not wait.
 * - Chunks from `readable` belong to the reader: the transport never writes to them again,
 *   so views into them can be kept.
 * - A chunk given to `writable` is the writer's again once its write resolved: the transport
 *   copies what it keeps past that (as a socket's kernel buffer does), so a writer may reuse
 *   the chunk's memory.
 * - The optional `readChunk`, `writeChunk` and `closeWrite` do what `readable`, `writable`
 *   and closing `writable` do, without Web Streams, under the same rules (`close()` flushes
 *   a `writeChunk` in flight); a transport that has them creates its streams only when they
 *   are first used. The channel prefers them.
 *
 * @example
 * ```ts
 * import type { Transport } from "@conduit/ipc/transports";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * const [a, b]: Transport[] = memoryPair();
 * const writer = a.writable.getWriter();
 * await writer.write(new Uint8Array([1, 2, 3]));
 * const { value } = await b.readable.getReader().read();
 * assert.deepEqual(value, new Uint8Array([1, 2, 3]));
 * writer.releaseLock();
 * await a.close();
 * await b.close();
 * ```
 */
export interface Transport extends AsyncDisposable {
  /** Bytes from the peer. Ends when the peer closes or half-closes. */
  readonly readable: ReadableStream<Uint8Array>;
  /** Bytes to the peer. Closing it half-closes the transport. */
  readonly writable: WritableStream<Uint8Array>;
  /**
   * The peer's address, for a network connection: a TCP or TLS connection's `Deno.NetAddr`,
   * a Unix socket's `Deno.UnixAddr` (its `path` is usually empty on the accepting side).
   * Absent for the other transports (memory, stdio, threads, NATS).
   */
  readonly remoteAddr?: Deno.Addr;
  /**
   * The bytes the system has taken for the peer so far, counted as each part of a write goes:
   * a large chunk written to a slow reader moves it many times before its write settles.
   * Optional: the Unix socket and TCP transports have it (a channel's `idleTimeout` reads it
   * to tell a slow reader from one that reads nothing).
   */
  readonly bytesSent?: number;
  /**
   * Reads the next bytes from the peer straight into `view`, instead of through `readable`,
   * so a large message can land in its own buffer with no copy (framing's `FrameReader`
   * reads the rest of a large frame this way). Optional: the Unix socket, TCP, TLS and stdio
   * transports have it, the in-memory one does not.
   *
   * The caller holds `readable`'s reader and mixes the two ways of reading as it likes: a
   * transport with `readInto` reads nothing ahead into `readable`, so the bytes arrive in
   * order whichever way they are read. It resolves with the bytes read (at least one byte of
   * a non-empty `view`): a view of the start of `view`, or of the buffer `view`'s ArrayBuffer
   * was transferred to (the parent side of stdio reads with a BYOB reader, which detaches
   * `view`: read only into a buffer nothing else views). It resolves with `null` once the
   * stream has ended (as `readable` ends; also when `close()` ends a pending read), rejects
   * with `TransportClosedError` once the connection broke or after `abort()`, and with
   * `TypeError` when called while a read of either kind is pending.
   *
   * @param view Where the bytes go; its length is the most that is read.
   * @returns The bytes read, or `null` at the end of the stream.
   *
   * @example
   * ```ts
   * import { connectUnix, listenUnix } from "@conduit/ipc/transports/unix";
   * import assert from "node:assert/strict";
   *
   * const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
   * const listener = await listenUnix(`${dir}/s`);
   * const accepted = listener.accept();
   * await using a = await connectUnix(`${dir}/s`);
   * await using b = await accepted;
   * const writer = a.writable.getWriter();
   * await writer.write(new Uint8Array([1, 2, 3, 4, 5]));
   * await writer.close();
   *
   * const reader = b.readable.getReader();
   * const into = new Uint8Array(5);
   * for (let filled = 0; filled < into.length;) {
   *   const read = await b.readInto!(into.subarray(filled));
   *   assert.ok(read !== null, "the stream ended early");
   *   filled += read.length;
   * }
   * assert.deepEqual(into, new Uint8Array([1, 2, 3, 4, 5]));
   * // Both ways of reading see the end.
   * assert.equal(await b.readInto!(new Uint8Array(8)), null);
   * assert.equal((await reader.read()).done, true);
   * await listener.close();
   * await Deno.remove(dir, { recursive: true });
   * ```
   */
  readonly readInto?: ((view: Uint8Array) => Promise<Uint8Array | null>) | undefined;
  /**
   * Whether `readInto` moves a received buffer into a `view` that is the whole of a buffer its
   * size, without a copy (the thread transports, whose messages arrive as buffers of their
   * own): a reader then offers a large frame's whole buffer at once. Optional.
   */
  readonly readIntoMoves?: boolean | undefined;
  /**
   * Reads the next chunk from the peer without `readable`: resolves with it, or `null` once the
   * stream has ended, and rejects as `readInto` does. Optional, with `writeChunk` and
   * `closeWrite` a way to use the transport without its Web Streams: a caller that never
   * touches `readable` and `writable` spares the process loading Deno's Web Streams, which
   * delays a worker's first reply (`bench/ab_engine.ts` case `spawn`). The
   * channel uses them when present; the Unix socket, TCP, TLS and stdio transports have them.
   * Mixes with `readInto`, not with reads of `readable`.
   *
   * @returns The next bytes, or `null` at the end of the stream.
   *
   * @example
   * ```ts
   * import { connectUnix, listenUnix } from "@conduit/ipc/transports/unix";
   * import assert from "node:assert/strict";
   *
   * const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
   * const listener = await listenUnix(`${dir}/s`);
   * const accepted = listener.accept();
   * await using a = await connectUnix(`${dir}/s`);
   * await using b = await accepted;
   * await a.writeChunk!(new Uint8Array([1, 2, 3]));
   * await a.closeWrite!();
   * assert.deepEqual(await b.readChunk!(), new Uint8Array([1, 2, 3]));
   * assert.equal(await b.readChunk!(), null);
   * await listener.close();
   * await Deno.remove(dir, { recursive: true });
   * ```
   */
  readonly readChunk?: (() => Promise<Uint8Array | null>) | undefined;
  /**
   * Writes all of `chunk` to the peer without `writable`: resolves once it is written (or
   * returns `undefined` when it was written synchronously), rejects with
   * `TransportClosedError` once the transport is closed or the write failed. Call it again
   * only once the previous write settled; do not mix it with writes to `writable`. Optional,
   * see `readChunk`.
   *
   * @param chunk The bytes; the transport may keep a reference until the write settles.
   * @returns A promise of the write, or `undefined` when it is done already.
   */
  writeChunk?(chunk: Uint8Array): Promise<void> | undefined;
  /**
   * Half-closes without `writable`, as closing `writable` does: the peer's reads end once
   * they have every byte, and this side can still read. Optional, see `readChunk`.
   */
  closeWrite?(): Promise<void>;
  /** Flushes pending writes, closes both directions and releases every resource. */
  close(): Promise<void>;
  /**
   * Closes both directions at once, dropping pending writes.
   *
   * @param reason The `cause` of the errors later reads and writes fail with.
   */
  abort(reason?: unknown): Promise<void>;
}

/**
 * A source of incoming transports, one per accepted connection. Iterate it with
 * `for await`; the iteration ends once the listener is closed. Leaving the loop early does
 * not close the listener, and accepted transports belong to the caller: they outlive it.
 *
 * @example
 * ```ts
 * import type { Listener } from "@conduit/ipc/transports";
 * import { listenTcp } from "@conduit/ipc/transports/tcp";
 * import assert from "node:assert/strict";
 *
 * const listener: Listener = await listenTcp({ port: 0 });
 * assert.ok(listener.addr);
 * await listener.close();
 * ```
 */
export interface Listener extends AsyncIterable<Transport>, AsyncDisposable {
  /** The address the listener is bound to. */
  readonly addr: Deno.Addr;
  /**
   * How connections taken straight from a network address are protected in transit: `"none"`
   * (`listenTcp`) or `"tls"` (`listenTls`). Absent where who can connect is settled elsewhere:
   * a Unix socket's owner-only file, a NATS server's permissions. `serve()` reads it to require
   * authentication, or an explicit opt-out, on network listeners.
   */
  readonly encryption?: "none" | "tls";
  /**
   * Waits for the next connection. Rejects with `TransportClosedError` once the listener is
   * closed. Use it, or iterate the listener, not both at once.
   */
  accept(): Promise<Transport>;
  /** Stops accepting, releases the address (and removes a Unix socket file). */
  close(): Promise<void>;
}
