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
 * const listener: Listener = listenTcp({ port: 0 });
 * assert.ok(listener.addr);
 * await listener.close();
 * ```
 */
export interface Listener extends AsyncIterable<Transport>, AsyncDisposable {
  /** The address the listener is bound to. */
  readonly addr: Deno.Addr;
  /**
   * Waits for the next connection. Rejects with `TransportClosedError` once the listener is
   * closed. Use it, or iterate the listener, not both at once.
   */
  accept(): Promise<Transport>;
  /** Stops accepting, releases the address (and removes a Unix socket file). */
  close(): Promise<void>;
}
