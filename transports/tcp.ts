/**
 * TCP and TLS transports: {@linkcode listenTcp} / {@linkcode connectTcp} and
 * {@linkcode listenTls} / {@linkcode connectTls}. Listeners bind to loopback unless told
 * otherwise, and plain TCP connections disable Nagle's algorithm (`setNoDelay(true)`), since
 * conduit coalesces its own writes and a request must not wait for the previous reply's ACK.
 *
 * TLS caveat: Deno gives no way to set `TCP_NODELAY` on a connection accepted by
 * `Deno.listenTls` (a `Deno.TlsConn` has no `setNoDelay`), so the server side of a TLS
 * connection keeps Nagle's algorithm: a small write made while earlier bytes are unacknowledged
 * can wait for the peer's delayed ACK (tens of ms). {@linkcode connectTls} sets `TCP_NODELAY`
 * on its side by connecting over TCP first and upgrading with `Deno.startTls`. On Node and Bun
 * (`node:net` and `node:tls`) both sides set it.
 *
 * @example Echo over TCP
 * ```ts
 * import { connectTcp, listenTcp } from "@conduit/ipc/transports/tcp";
 * import assert from "node:assert/strict";
 *
 * await using listener = await listenTcp({ port: 0 });
 * const serving = (async () => {
 *   for await (const server of listener) {
 *     await server.readable.pipeTo(server.writable); // echo until the client half-closes
 *     await server.close();
 *     return;
 *   }
 * })();
 * const { port } = listener.addr as Deno.NetAddr;
 * await using client = await connectTcp({ port });
 * const writer = client.writable.getWriter();
 * await writer.write(new TextEncoder().encode("hi"));
 * await writer.close();
 * const echoed = await new Response(client.readable).text();
 * assert.equal(echoed, "hi");
 * await serving;
 * ```
 *
 * @module
 */

import { onDeno, timerDelay } from "../_runtime.ts";
import { ConnListener, connTransport } from "./_conn_transport.ts";
import type { Listener, Transport } from "./types.ts";

// The types this module's API shows, so that its documentation is complete on its own.
export type { Listener, Transport };

/** The default hostname listeners bind to and clients connect to: IPv4 loopback. */
export const DEFAULT_TCP_HOSTNAME = "127.0.0.1";

/** Options for {@linkcode listenTcp}. */
export interface TcpListenOptions {
  /**
   * The address to bind. Anything other than loopback accepts connections from other
   * machines: use TLS ({@linkcode listenTls}) for those (`serve()` refuses a plain TCP
   * listener off loopback without `auth` unless told `insecure: true`).
   *
   * @default {DEFAULT_TCP_HOSTNAME} ("127.0.0.1")
   */
  hostname?: string;
  /**
   * The port to bind; `0` picks a free one (read it from `listener.addr`).
   *
   * @default {0}
   */
  port?: number;
}

/** Options for {@linkcode connectTcp}. */
export interface TcpConnectOptions {
  /**
   * The host to connect to.
   *
   * @default {DEFAULT_TCP_HOSTNAME} ("127.0.0.1")
   */
  hostname?: string;
  /** The port to connect to. */
  port: number;
  /**
   * Gives up connecting when it aborts: the promise rejects with its reason and the socket is
   * closed (for TLS, during the handshake too). Connected transports are not affected.
   *
   * @default {undefined} (a TCP connect waits as long as the system does)
   */
  signal?: AbortSignal;
}

/** Options for {@linkcode listenTls}: a TCP address plus the server's certificate chain. */
export interface TlsListenOptions extends TcpListenOptions {
  /** The server's certificate chain, PEM-encoded, leaf first. */
  cert: string;
  /** The private key of the leaf certificate, PEM-encoded. */
  key: string;
}

/** Options for {@linkcode connectTls}. */
export interface TlsConnectOptions extends TcpConnectOptions {
  /**
   * PEM-encoded CA certificates to trust, in place of the default roots (for a private CA
   * or a test certificate).
   *
   * @default {undefined} (the runtime's default roots: Deno's, or Node's and Bun's bundled ones)
   */
  caCerts?: string[];
  /**
   * How long, in milliseconds, connecting and the TLS handshake may take together: past it,
   * the promise rejects with a `DOMException` named `TimeoutError` and the socket is closed
   * (a server that accepts and never answers would otherwise hold the client for good).
   *
   * @default {10000}
   */
  handshakeTimeout?: number;
  /**
   * The name the server's certificate must carry, when it differs from `hostname` (for
   * example when connecting to an IP address whose certificate names a host).
   *
   * @default {hostname}
   */
  serverName?: string;
}

/**
 * Listens for TCP connections; each accepted connection is a {@linkcode Transport} with
 * `setNoDelay(true)`. Its `encryption` is `"none"`: `serve()` on it needs `auth`, or
 * `auth: false` to serve without it (and `insecure: true` too off loopback).
 *
 * @param options Address to bind; see {@linkcode TcpListenOptions}.
 * @returns A listener, once it is bound; iterate it to accept, `close()` it to stop.
 *
 * @example
 * ```ts
 * import { listenTcp } from "@conduit/ipc/transports/tcp";
 * import assert from "node:assert/strict";
 *
 * const listener = await listenTcp({ port: 0 });
 * assert.equal((listener.addr as Deno.NetAddr).hostname, "127.0.0.1");
 * assert.equal(listener.encryption, "none");
 * await listener.close();
 * ```
 */
export async function listenTcp(options: TcpListenOptions = {}): Promise<Listener> {
  const hostname = options.hostname ?? DEFAULT_TCP_HOSTNAME;
  if (!onDeno()) {
    return (await import("./_node_socket.ts")).nodeListenTcp(hostname, options.port ?? 0);
  }
  const listener = Deno.listen({ transport: "tcp", hostname, port: options.port ?? 0 });
  return new ConnListener(listener, (conn) => {
    conn.setNoDelay(true);
    return connTransport(conn, `TCP connection from ${formatAddr(conn.remoteAddr)}`);
  }, { encryption: "none" });
}

/**
 * Connects to a TCP listener, with `setNoDelay(true)`.
 *
 * @param options Where to connect; see {@linkcode TcpConnectOptions}.
 * @returns The connected transport.
 * @throws {Deno.errors.ConnectionRefused} When nothing listens there.
 *
 * @example
 * ```ts
 * import { connectTcp, listenTcp } from "@conduit/ipc/transports/tcp";
 * import assert from "node:assert/strict";
 *
 * await using listener = await listenTcp({ port: 0 });
 * const accepted = listener.accept();
 * await using client = await connectTcp({ port: (listener.addr as Deno.NetAddr).port });
 * await using server = await accepted;
 * await client.close();
 * const { done } = await server.readable.getReader().read();
 * assert.ok(done);
 * ```
 */
export async function connectTcp(options: TcpConnectOptions): Promise<Transport> {
  const hostname = options.hostname ?? DEFAULT_TCP_HOSTNAME;
  const { port, signal } = options;
  signal?.throwIfAborted();
  if (!onDeno()) {
    return (await import("./_node_socket.ts")).nodeConnectTcp(hostname, port, signal);
  }
  const conn = await Deno.connect({ transport: "tcp", hostname, port, signal }).catch(
    (error) => Promise.reject(signal?.aborted ? signal.reason : error),
  );
  conn.setNoDelay(true);
  return connTransport(conn, `TCP connection to ${hostname}:${port}`);
}

/**
 * Listens for TLS connections. The handshake of an accepted connection runs on its first
 * read or write (on Node and Bun: once accepted); a client that fails it shows up as a read
 * error on that transport, not on the listener. Its `encryption` is `"tls"`: `serve()` on it
 * needs `auth`, or `auth: false` to serve any client that connects.
 *
 * @param options Address, certificate and key; see {@linkcode TlsListenOptions}.
 * @returns A listener, once it is bound; iterate it to accept, `close()` it to stop.
 * @throws {Deno.errors.InvalidData} On Deno, when `cert` or `key` is not PEM. On Node and Bun
 * a `TypeError` naming the option, also when `key` is not the key of `cert`.
 *
 * @example Echo over TLS (with the repository's test-only certificate)
 * ```ts
 * import { connectTls, listenTls } from "@conduit/ipc/transports/tcp";
 * import assert from "node:assert/strict";
 *
 * await using listener = await listenTls({
 *   cert: await Deno.readTextFile("testdata/tls/server.pem"),
 *   key: await Deno.readTextFile("testdata/tls/server.key"),
 * });
 * const serving = (async () => {
 *   for await (const server of listener) {
 *     await server.readable.pipeTo(server.writable);
 *     await server.close();
 *     return;
 *   }
 * })();
 * await using client = await connectTls({
 *   port: (listener.addr as Deno.NetAddr).port,
 *   caCerts: [await Deno.readTextFile("testdata/tls/ca.pem")],
 * });
 * const writer = client.writable.getWriter();
 * await writer.write(new TextEncoder().encode("secret"));
 * await writer.close();
 * assert.equal(await new Response(client.readable).text(), "secret");
 * await serving;
 * ```
 */
export function listenTls(options: TlsListenOptions): Promise<Listener> {
  // A promise for one shape with listenTcp, which binds asynchronously on Node and Bun.
  const hostname = options.hostname ?? DEFAULT_TCP_HOSTNAME;
  if (!onDeno()) {
    return import("./_node_tls.ts").then((node) =>
      node.nodeListenTls({
        hostname,
        port: options.port ?? 0,
        cert: options.cert,
        key: options.key,
      })
    );
  }
  try {
    const listener = Deno.listenTls({
      transport: "tcp",
      hostname,
      port: options.port ?? 0,
      cert: options.cert,
      key: options.key,
    });
    return Promise.resolve(
      new ConnListener(
        listener,
        (conn) => connTransport(conn, `TLS connection from ${formatAddr(conn.remoteAddr)}`),
        { encryption: "tls" },
      ),
    );
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Connects to a TLS listener and completes the handshake, so a certificate the client does
 * not trust fails here rather than on the first write. `TCP_NODELAY` is set on this side.
 *
 * @param options Where to connect and whom to trust; see {@linkcode TlsConnectOptions}.
 * @returns The connected transport.
 * @throws {Deno.errors.InvalidData} On Deno, when the server's certificate is not trusted or
 * does not name `serverName`. On Node and Bun an `Error` that says which (and which option
 * fixes it), with Node's `code` (`UNABLE_TO_VERIFY_LEAF_SIGNATURE`,
 * `ERR_TLS_CERT_ALTNAME_INVALID`); a refused connection is `connectTcp`'s error there too.
 *
 * @example A server whose certificate the client does not trust
 * ```ts
 * import { connectTls, listenTls } from "@conduit/ipc/transports/tcp";
 * import assert from "node:assert/strict";
 *
 * await using listener = await listenTls({
 *   cert: await Deno.readTextFile("testdata/tls/server.pem"),
 *   key: await Deno.readTextFile("testdata/tls/server.key"),
 * });
 * const accepting = listener[Symbol.asyncIterator]().next();
 * // No caCerts: the system's roots do not include the test CA.
 * await assert.rejects(
 *   connectTls({ port: (listener.addr as Deno.NetAddr).port }),
 *   Deno.errors.InvalidData,
 * );
 * await using server = (await accepting).value!;
 * await assert.rejects(Array.fromAsync(server.readable)); // its handshake failed too
 * ```
 */
export function connectTls(options: TlsConnectOptions): Promise<Transport> {
  const hostname = options.hostname ?? DEFAULT_TCP_HOSTNAME;
  const { port } = options;
  const timeout = options.handshakeTimeout ?? DEFAULT_TLS_HANDSHAKE_TIMEOUT;
  if (!(timeout > 0)) {
    return Promise.reject(
      new RangeError(`connectTls: handshakeTimeout must be positive, got ${timeout}`),
    );
  }
  return bounded(
    options.signal,
    timeout,
    `connectTls to ${hostname}:${port}: no TLS handshake within handshakeTimeout (${timeout} ms)`,
    async (signal) => {
      if (!onDeno()) {
        return (await import("./_node_tls.ts")).nodeConnectTls({
          hostname,
          port,
          caCerts: options.caCerts,
          serverName: options.serverName,
          signal,
        });
      }
      const tcp = await Deno.connect({ transport: "tcp", hostname, port, signal });
      // Closing the connection is how the handshake is abandoned.
      let conn: Deno.Conn = tcp;
      const abandon = () => closeQuietly(conn);
      signal.addEventListener("abort", abandon, { once: true });
      try {
        tcp.setNoDelay(true);
        const tls = await Deno.startTls(tcp, {
          hostname: options.serverName ?? hostname,
          caCerts: options.caCerts,
        });
        conn = tls;
        signal.throwIfAborted();
        await tls.handshake();
        signal.throwIfAborted();
        return connTransport(tls, `TLS connection to ${hostname}:${port}`);
      } catch (error) {
        closeQuietly(conn);
        throw error;
      } finally {
        signal.removeEventListener("abort", abandon);
      }
    },
  );
}

/** The default of {@linkcode TlsConnectOptions.handshakeTimeout}, in milliseconds. */
const DEFAULT_TLS_HANDSHAKE_TIMEOUT = 10_000;

/**
 * Runs `connect` with a signal that aborts when `signal` does or after `timeout` ms (with a
 * `TimeoutError` saying `message`); rejects with that reason once it aborted, whatever
 * `connect` rejected with as its socket was closed under it.
 */
async function bounded<T>(
  signal: AbortSignal | undefined,
  timeout: number,
  message: string,
  connect: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  signal?.throwIfAborted();
  const giveUp = new AbortController();
  const onAbort = () => giveUp.abort(signal!.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  const timer = setTimeout(
    () => giveUp.abort(new DOMException(message, "TimeoutError")),
    timerDelay(timeout),
  );
  try {
    return await connect(giveUp.signal);
  } catch (error) {
    throw giveUp.signal.aborted ? giveUp.signal.reason : error;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}

function formatAddr(addr: Deno.Addr): string {
  return addr.transport === "tcp" || addr.transport === "udp"
    ? `${addr.hostname}:${addr.port}`
    : addr.transport;
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Deno.startTls consumed it, or it is closed already.
  }
}
