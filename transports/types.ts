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
 * Close semantics, shared by every implementation:
 * - {@linkcode Transport.close} is graceful: bytes already written are flushed, then both
 *   directions close. It is idempotent and resolves when every OS resource is released.
 * - {@linkcode Transport.abort} is abortive: pending writes are dropped and both directions
 *   close at once.
 * - After the peer closes, `readable` ends (a read returns `done`). A write after close is
 *   rejected with `TransportClosedError`. A peer that dies mid-write errors the write, never
 *   hangs it.
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
  /** Bytes from the peer. Ends when the peer closes. */
  readonly readable: ReadableStream<Uint8Array>;
  /** Bytes to the peer. */
  readonly writable: WritableStream<Uint8Array>;
  /** Flushes pending writes, closes both directions and releases every resource. */
  close(): Promise<void>;
  /** Closes both directions at once, dropping pending writes. */
  abort(reason?: unknown): Promise<void>;
}

/**
 * A source of incoming transports, one per accepted connection. Iterate it with
 * `for await`; the iteration ends once the listener is closed.
 *
 * @example
 * ```ts
 * import type { Listener } from "@conduit/ipc/transports";
 * import { listenTcp } from "@conduit/ipc/transports/tcp";
 * import assert from "node:assert/strict";
 *
 * const listener: Listener = listenTcp({ port: 0 });
 * assert.ok(listener.addr);
 * await listener.close();
 * ```
 */
export interface Listener extends AsyncIterable<Transport>, AsyncDisposable {
  /** The address the listener is bound to. */
  readonly addr: Deno.Addr;
  /** Stops accepting, releases the address (and removes a Unix socket file). */
  close(): Promise<void>;
}
