// Sockets through `node:net`, for Node and Bun: a net.Socket as a ByteChannel, a net.Server as
// a Listener, and the Unix and TCP connect/listen that transports/unix.ts and tcp.ts use off
// Deno (loaded only there; Deno runs this module too, which is how its tests check it). The
// same contract as the Deno transports: bytes in order, backpressure both ways (a read queue
// that pauses the socket, writes settled when the runtime has the bytes), half-close, and a
// listener that closes what it accepted but did not hand out.

import * as fs from "node:fs/promises";
import * as net from "node:net";
import { TransportClosedError } from "../errors.ts";
import { type ByteChannel, ByteChannelTransport } from "./_byte_channel_transport.ts";
import { ListenerBase } from "./_conn_transport.ts";
import { NodeReader } from "./_node_reader.ts";
import type { Listener, Transport } from "./types.ts";

/** Bytes read ahead of the reader before the socket is paused. */
const READ_AHEAD_BYTES = 256 * 1024;
/** Connections accepted but not yet taken by `accept()` before new ones are dropped. */
const MAX_PENDING_CONNECTIONS = 1024;

/** How {@linkcode socketTransport} reads and names a socket. */
export interface SocketTransportOptions {
  /** The peer's address, as the transport's `remoteAddr`. */
  remoteAddr?: Deno.Addr;
  /** Bytes read ahead of the reader before the socket is paused (`Infinity`: never paused). */
  readAheadBytes?: number;
  /** Tells an error of the socket that is in truth the peer's clean end (see _node_tls.ts). */
  isEnd?: (error: Error) => boolean;
}

/** `socket` as a Transport; `label` names it in error messages. */
export function socketTransport(
  socket: net.Socket,
  label: string,
  options: SocketTransportOptions = {},
): Transport {
  const channel = new SocketChannel(socket, label, options);
  const transport = new ByteChannelTransport(channel);
  return options.remoteAddr === undefined
    ? transport
    : Object.defineProperty(transport, "remoteAddr", { value: options.remoteAddr });
}

class SocketChannel implements ByteChannel {
  readonly label: string;
  readonly #socket: net.Socket;
  readonly #reader: NodeReader;
  readonly #closed: Promise<void>;

  constructor(socket: net.Socket, label: string, options: SocketTransportOptions) {
    this.#socket = socket;
    this.label = label;
    const readAheadBytes = options.readAheadBytes ?? READ_AHEAD_BYTES;
    this.#reader = new NodeReader(socket, readAheadBytes, options.isEnd);
    this.#closed = new Promise((resolve) => socket.once("close", () => resolve()));
  }

  read(): Promise<Uint8Array | null> {
    return this.#reader.read();
  }

  /**
   * What the system took: the socket's count (the chunks handed to its handle, one at a time
   * here) less what waits in the handle's write queue where the runtime shows it (Node's
   * libuv handle), else less what waits in the socket's buffer.
   */
  get bytesSent(): number {
    const socket = this.#socket;
    const queued = (socket as { _handle?: { writeQueueSize?: number } })._handle?.writeQueueSize;
    return socket.bytesWritten - (queued ?? socket.writableLength);
  }

  write(chunk: Uint8Array): Promise<void> {
    const failure = this.#reader.failure;
    if (failure !== undefined) return Promise.reject(failure);
    // Settled once the runtime is done with `chunk` (the caller may reuse its memory then).
    return new Promise((resolve, reject) =>
      this.#socket.write(chunk, (error) => error ? reject(error) : resolve())
    );
  }

  closeWrite(): Promise<void> {
    return new Promise((resolve) => this.#socket.end(() => resolve()));
  }

  async close(): Promise<void> {
    // Abortive or not, as Deno's sockets: the peer reads the end (no reset).
    this.#socket.destroy();
    await this.#closed;
  }
}

/** A net.Server's connections as Transports (`wrap` makes each one; _node_tls.ts wraps TLS). */
export class ServerListener extends ListenerBase {
  readonly addr: Deno.Addr;
  readonly encryption: "none" | "tls" | undefined;
  readonly #server: net.Server;
  readonly #wrap: (socket: net.Socket) => Transport;
  readonly #onClose: (() => Promise<void>) | undefined;
  /** Connections not yet taken by `accept()`, each with what drops it should it fail first. */
  readonly #pending: { socket: net.Socket; drop: () => void }[] = [];
  readonly #accepting: PromiseWithResolvers<net.Socket>[] = [];
  #failure: Error | undefined;

  constructor(
    server: net.Server,
    addr: Deno.Addr,
    wrap: (socket: net.Socket) => Transport,
    options: { encryption?: "none" | "tls"; onClose?: () => Promise<void> } = {},
  ) {
    super();
    this.#server = server;
    this.addr = addr;
    this.#wrap = wrap;
    this.encryption = options.encryption;
    this.#onClose = options.onClose;
    server.on("connection", (socket: net.Socket) => {
      const accepting = this.#accepting.shift();
      if (accepting !== undefined) accepting.resolve(socket);
      else if (this.#pending.length < MAX_PENDING_CONNECTIONS) this.#hold(socket);
      else socket.destroy();
    });
    server.on("error", (error: Error) => {
      this.#failure = error;
      for (const accepting of this.#accepting.splice(0)) accepting.reject(error);
    });
  }

  async accept(): Promise<Transport> {
    if (this.closing) throw new TransportClosedError("The listener is closed");
    if (this.#failure !== undefined) throw this.#failure;
    let socket = this.#take();
    if (socket === undefined) {
      const accepting = Promise.withResolvers<net.Socket>();
      this.#accepting.push(accepting);
      socket = await accepting.promise;
    }
    return this.#wrap(socket);
  }

  /**
   * Keeps `socket` for a later `accept()`. Until then it has no reader listening: a peer that
   * resets it would fail it with an 'error' nobody handles, which ends a Node process, so it is
   * dropped instead (Deno's accept() fails with NotConnected for such a connection).
   */
  #hold(socket: net.Socket): void {
    const pending = this.#pending;
    const entry = {
      socket,
      drop: () => {
        const at = pending.indexOf(entry);
        if (at >= 0) pending.splice(at, 1);
        socket.destroy();
      },
    };
    socket.on("error", entry.drop);
    socket.on("close", entry.drop);
    pending.push(entry);
  }

  /** The oldest pending connection, now the caller's. */
  #take(): net.Socket | undefined {
    const entry = this.#pending.shift();
    if (entry === undefined) return undefined;
    entry.socket.off("error", entry.drop);
    entry.socket.off("close", entry.drop);
    return entry.socket;
  }

  protected override async release(): Promise<void> {
    // Stops listening at once; its "close" waits for the connections handed out, which are
    // their owners' to close, so it is not awaited.
    this.#server.close();
    for (let socket = this.#take(); socket !== undefined; socket = this.#take()) socket.destroy();
    for (const accepting of this.#accepting.splice(0)) {
      accepting.reject(new TransportClosedError("The listener is closed"));
    }
    await this.#onClose?.();
  }
}

/** Resolves once `server` listens (`listen` called by `start`), rejects with its error. */
export function listening(server: net.Server, start: () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.once("listening", () => {
      server.off("error", reject);
      resolve();
    });
    start();
  });
}

/** Connects `socket` (`connect` called by `start`), resolving once connected. */
export function connected(start: () => net.Socket, signal?: AbortSignal): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = start();
    const abandon = () => {
      socket.destroy();
      reject(signal!.reason);
    };
    const settle = () => {
      socket.off("error", failed);
      signal?.removeEventListener("abort", abandon);
    };
    const failed = (error: Error) => {
      settle();
      reject(error);
    };
    socket.once("error", failed);
    signal?.addEventListener("abort", abandon, { once: true });
    socket.once("connect", () => {
      settle();
      resolve(socket);
    });
  });
}

/** A TCP listener (Node and Bun); `setNoDelay(true)` on each connection. */
export async function nodeListenTcp(hostname: string, port: number): Promise<Listener> {
  const server = net.createServer({ noDelay: true, allowHalfOpen: true });
  await listening(server, () => server.listen(port, hostname));
  const address = server.address() as net.AddressInfo;
  return new ServerListener(
    server,
    { transport: "tcp", hostname: address.address, port: address.port },
    (socket) =>
      socketTransport(socket, `TCP connection from ${socket.remoteAddress}:${socket.remotePort}`, {
        remoteAddr: {
          transport: "tcp",
          hostname: socket.remoteAddress ?? "",
          port: socket.remotePort ?? 0,
        },
      }),
    { encryption: "none" },
  );
}

/** A TCP connection (Node and Bun), with `setNoDelay(true)`. */
export async function nodeConnectTcp(
  hostname: string,
  port: number,
  signal?: AbortSignal,
): Promise<Transport> {
  const socket = await connected(
    () => net.connect({ host: hostname, port, noDelay: true, allowHalfOpen: true }),
    signal,
  );
  return socketTransport(socket, `TCP connection to ${hostname}:${port}`);
}

/**
 * A Unix socket listener (Node and Bun): bound in a private directory beside `path`, made
 * owner-only, then linked into place, so the file is never reachable with other permissions; a
 * stale file (nothing listens) is replaced, a live listener's never; the file is removed on
 * close if it is still ours.
 */
export async function nodeListenUnix(path: string): Promise<Listener> {
  for (;;) {
    const server = await bindUnlessTaken(path);
    if (server !== undefined) {
      const { ino } = await fs.lstat(path);
      return new ServerListener(
        server,
        { transport: "unix", path },
        (socket) => socketTransport(socket, `Unix socket ${path}`),
        { onClose: () => removeIfOurs(path, ino) },
      );
    }
    await clearStaleSocket(path);
  }
}

/** A Unix socket connection (Node and Bun). */
export async function nodeConnectUnix(path: string): Promise<Transport> {
  const socket = await connected(() => net.connect({ path, allowHalfOpen: true }));
  return socketTransport(socket, `Unix socket ${path}`);
}

async function bindUnlessTaken(path: string): Promise<net.Server | undefined> {
  const privateDir = await fs.mkdtemp(`${dirname(path)}/.`);
  try {
    const bindPath = `${privateDir}/s`;
    const server = net.createServer({ allowHalfOpen: true });
    await listening(server, () => server.listen(bindPath));
    try {
      await fs.chmod(bindPath, 0o600);
      await fs.link(bindPath, path);
    } catch (error) {
      await new Promise((resolve) => server.close(resolve));
      if ((error as { code?: string }).code === "EEXIST") return undefined;
      throw error;
    }
    return server;
  } finally {
    await fs.rm(privateDir, { recursive: true, force: true });
  }
}

/** Removes the file at `path` if it is a socket nobody listens on; throws if it is live. */
async function clearStaleSocket(path: string): Promise<void> {
  let info;
  try {
    info = await fs.lstat(path);
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return;
    throw error;
  }
  if (!info.isSocket()) {
    throw Object.assign(new Error(`Cannot listen on ${path}: it exists and is not a socket`), {
      code: "EEXIST",
    });
  }
  try {
    (await connected(() => net.connect({ path }))).destroy();
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ENOENT") return;
    if (code !== "ECONNREFUSED") throw error;
    // Stale: remove it unless another listener replaced it since (no directory lock here).
    if ((await fs.lstat(path).catch(() => undefined))?.ino === info.ino) {
      await fs.rm(path, { force: true });
    }
    return;
  }
  throw Object.assign(new Error(`Cannot listen on ${path}: a live listener serves it`), {
    code: "EADDRINUSE",
  });
}

async function removeIfOurs(path: string, ino: number): Promise<void> {
  try {
    if ((await fs.lstat(path)).ino === ino) await fs.rm(path);
  } catch (error) {
    if ((error as { code?: string }).code !== "ENOENT") throw error;
  }
}

function dirname(path: string): string {
  const slash = path.lastIndexOf("/");
  if (slash < 0) return ".";
  return slash === 0 ? "/" : path.slice(0, slash);
}
