// TLS through `node:tls`, for Node and Bun: the listenTls/connectTls that transports/tcp.ts uses
// off Deno (loaded only there; Deno runs this module too, which is how its tests check it). A
// TLS socket is a net.Socket, so the byte channel and the listener are _node_socket.ts's. As on
// Deno, a listener accepts TCP connections and each runs its handshake once accepted: a client
// that fails it shows up as a read error on that transport, not on the listener. Unlike Deno,
// the server side sets `TCP_NODELAY` too. Errors keep Node's `code` and say which call, which
// side and which option failed.

import { createPrivateKey, X509Certificate } from "node:crypto";
import * as net from "node:net";
import * as tls from "node:tls";
import { connected, listening, ServerListener, socketTransport } from "./_node_socket.ts";
import { onDeno } from "../_runtime.ts";
import type { Listener, Transport } from "./types.ts";

/**
 * Deno's node:tls (where this module runs only in tests) loses the peer's end once a paused
 * TLS socket resumes (the read ahead is then never bounded there); Node and Bun pause it as
 * they pause plain sockets. A big transfer and the end after it: runtimes/_cases.ts, "tls: ...".
 */
const READ_AHEAD_BYTES = onDeno() ? Infinity : undefined;

/** What {@linkcode nodeListenTls} binds and serves. */
export interface NodeTlsListenOptions {
  hostname: string;
  port: number;
  /** PEM, leaf first. */
  cert: string;
  /** PEM. */
  key: string;
}

/** Where {@linkcode nodeConnectTls} connects and whom it trusts. */
export interface NodeTlsConnectOptions {
  hostname: string;
  port: number;
  /** PEM CA certificates in place of the runtime's bundled roots. */
  caCerts?: string[];
  /** The name the server's certificate must carry; `hostname` when absent. */
  serverName?: string;
  /** Gives up connecting: the socket is destroyed and the promise rejects with its reason. */
  signal?: AbortSignal;
}

/** A TLS listener (Node and Bun); `setNoDelay(true)` on each connection. */
export async function nodeListenTls(options: NodeTlsListenOptions): Promise<Listener> {
  const secureContext = serverContext(options.cert, options.key);
  const server = net.createServer({ noDelay: true, allowHalfOpen: true });
  await listening(server, () => server.listen(options.port, options.hostname));
  const address = server.address() as net.AddressInfo;
  return new ServerListener(
    server,
    { transport: "tcp", hostname: address.address, port: address.port },
    (socket) => {
      const remoteAddr: Deno.NetAddr = {
        transport: "tcp",
        hostname: socket.remoteAddress ?? "",
        port: socket.remotePort ?? 0,
      };
      const secure = new tls.TLSSocket(socket, { isServer: true, secureContext });
      let established = false;
      secure.once("secure", () => established = true);
      return socketTransport(
        secure,
        `TLS connection from ${remoteAddr.hostname}:${remoteAddr.port}`,
        {
          remoteAddr,
          readAheadBytes: READ_AHEAD_BYTES,
          isEnd: (error) => !established && isHangUp(error),
        },
      );
    },
    { encryption: "tls" },
  );
}

/**
 * A TLS connection (Node and Bun), with `setNoDelay(true)`, once its handshake is done: a
 * server this client does not trust fails here, not on the first write.
 */
export async function nodeConnectTls(options: NodeTlsConnectOptions): Promise<Transport> {
  const { hostname, port } = options;
  const name = options.serverName ?? hostname;
  const where = `${hostname}:${port}`;
  // The CAs are parsed first, so that a bad one is named as such (Node would only fail the
  // handshake with a certificate error).
  const ca = options.caCerts?.map((pem, i) => checkedCertificate(pem, `connectTls: caCerts[${i}]`));
  // TCP first, as on Deno, so that a refused connection is connectTcp's error.
  const signal = options.signal;
  const tcp = await connected(
    () => net.connect({ host: hostname, port, noDelay: true, allowHalfOpen: true }),
    signal,
  );
  const socket = await new Promise<tls.TLSSocket>((resolve, reject) => {
    const socket = tls.connect({
      socket: tcp,
      ca,
      // SNI carries host names only; the name to check is given below either way.
      servername: net.isIP(name) ? undefined : name,
      checkServerIdentity: (_, cert) => tls.checkServerIdentity(name, cert),
    });
    const abandon = () => {
      tcp.destroy();
      reject(signal!.reason);
    };
    const failed = (error: Error) => {
      signal?.removeEventListener("abort", abandon);
      tcp.destroy();
      reject(connectError(error, where, name)); // once: later errors land here unheard
    };
    socket.on("error", failed);
    signal?.addEventListener("abort", abandon, { once: true });
    socket.once("secureConnect", () => {
      socket.off("error", failed);
      signal?.removeEventListener("abort", abandon);
      resolve(socket);
    });
  });
  return socketTransport(socket, `TLS connection to ${where}`, {
    readAheadBytes: READ_AHEAD_BYTES,
  });
}

/**
 * Whether `error` is node:tls's "socket hang up": the TCP connection ended, without an error,
 * before the handshake did. Node says so to a server (`tlsClientError`) and ends the socket;
 * Bun fails the socket with it, for instance when a client closes right after `connectTls` (Bun's
 * client may not have sent its Finished yet). A peer that reset is "read ECONNRESET", with
 * `syscall` "read", on both. runtimes/_testdata/tls_hang_up.ts shows the two with plain node:tls.
 */
function isHangUp(error: Error): boolean {
  const { code, syscall } = error as { code?: string; syscall?: string };
  return code === "ECONNRESET" && syscall === undefined && error.message === "socket hang up";
}

/** The codes Node gives a server certificate that does not chain to a trusted CA. */
const UNTRUSTED_CODES = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_UNTRUSTED",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
  "CERT_SIGNATURE_FAILURE",
  "INVALID_CA",
]);

/** Node's `error` from connecting, said in conduit's words; `code` and `cause` kept. */
function connectError(error: Error, where: string, name: string): Error {
  const code = (error as { code?: string }).code;
  let what: string;
  if (code !== undefined && UNTRUSTED_CODES.has(code)) {
    what = `the server's certificate is not trusted (${code}: ${error.message}); ` +
      `pass the CA that signed it in caCerts`;
  } else if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    what = `the server's certificate does not name "${name}" (${error.message}); ` +
      `connect to a name it carries, or set serverName to one`;
  } else {
    what = `the TLS handshake failed (${code ?? error.name}: ${error.message})`;
  }
  return Object.assign(new Error(`connectTls to ${where}: ${what}`, { cause: error }), { code });
}

/** `cert` and `key` as a secure context, or an error naming the option at fault. */
function serverContext(cert: string, key: string): tls.SecureContext {
  const leaf = parsedCertificate(cert, "listenTls: cert");
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (error) {
    throw invalidOption("listenTls: key", "a PEM private key", error);
  }
  // Checked here: Deno's node:tls would take a key that does not match.
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new TypeError(
      `listenTls: key is not the private key of cert's first certificate (${leaf.subject})`,
    );
  }
  try {
    return tls.createSecureContext({ cert, key });
  } catch (error) {
    throw invalidOption("listenTls: cert and key", "a usable certificate chain and key", error);
  }
}

function parsedCertificate(pem: string, option: string): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch (error) {
    throw invalidOption(option, "a PEM certificate", error);
  }
}

function checkedCertificate(pem: string, option: string): string {
  parsedCertificate(pem, option);
  return pem;
}

function invalidOption(option: string, expected: string, error: unknown): Error {
  const cause = error as Error & { code?: string };
  return Object.assign(
    new TypeError(`${option} is not ${expected} (${cause.code ?? cause.name}: ${cause.message})`, {
      cause,
    }),
    { code: cause.code },
  );
}
