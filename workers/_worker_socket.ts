// The Unix socket a worker connects to (`transport: "unix"`): a listener under a fresh
// owner-only temporary directory, the one connection accepted unless the worker exits or the
// time runs out first, and everything removed afterwards.

import type * as net from "node:net";
import { ConnectionClosedError, HandshakeError } from "../channel/errors.ts";
import { connTransport } from "../transports/_conn_transport.ts";
import type { Transport } from "../transports/types.ts";
import { nodeBuiltin, onDeno, within } from "../_runtime.ts";
import { WORKER_SOCKET_PARENT } from "./spawn_worker_options.ts";

/** How long to wait for a worker to connect when no handshake timeout is given: 10 s. */
const DEFAULT_ACCEPT_TIMEOUT = 10_000;
/** What accept() waits for in place of a connection that did not come in time. */
const LATE = Symbol("late");

/** A listener waiting for one worker. */
export class WorkerSocket {
  /** The socket's path, for the worker's environment. */
  readonly path: string;
  readonly #dir: string;
  // A plain listener (the directory is fresh and ours), so that the accepted connection
  // stays at hand for ref()/unref().
  readonly #listener: OneListener;
  /** The worker's connection, once accepted. */
  accepted: Holdable | undefined;

  private constructor(dir: string, path: string, listener: OneListener) {
    this.#dir = dir;
    this.path = path;
    this.#listener = listener;
  }

  /** Listens on a socket in a new temporary directory. */
  static async open(): Promise<WorkerSocket> {
    const dir = await makeTempDir();
    const path = `${dir}/w.sock`;
    try {
      return new WorkerSocket(
        dir,
        path,
        onDeno() ? denoListener(path) : await nodeListener(path),
      );
    } catch (error) {
      await removeDir(dir);
      throw error;
    }
  }

  /**
   * Accepts the worker's connection, unless `exited` settles first or `timeout` passes.
   *
   * @throws {HandshakeError} When the worker did not connect in time (`handshake_timeout`: the
   * time is the handshake's).
   * @throws {ConnectionClosedError} When the worker exited first, or the listener closed.
   */
  async accept(exited: Promise<unknown>, timeout: number | undefined): Promise<Transport> {
    const limit = timeout ?? DEFAULT_ACCEPT_TIMEOUT;
    const next = await within(
      Promise.race([
        this.#listener.next(),
        exited.then(() => {
          throw new ConnectionClosedError("The worker exited before it connected");
        }),
      ]),
      limit,
      LATE,
    );
    if (next === LATE) {
      throw new HandshakeError(
        "handshake_timeout",
        `The worker did not connect to its socket within handshakeTimeout (${limit} ms)`,
      );
    }
    if (next === undefined) throw new ConnectionClosedError("The listener closed");
    this.accepted = next.conn;
    return next.transport(`Unix socket ${this.path}`);
  }

  /** Stops listening and removes the directory. */
  async close(): Promise<void> {
    try {
      this.#listener.close();
    } catch {
      // Closed already.
    }
    await removeDir(this.#dir);
  }
}

/** A connection that can stop keeping this process alive. */
export interface Holdable {
  ref(): void;
  unref(): void;
}

/** A listener's next connection (`undefined` once it closed), and closing it. */
interface OneListener {
  next(): Promise<{ conn: Holdable; transport(label: string): Transport } | undefined>;
  close(): void;
}

function denoListener(path: string): OneListener {
  const listener = Deno.listen({ transport: "unix", path });
  const iterator = listener[Symbol.asyncIterator]();
  return {
    next: async () => {
      const next = await iterator.next();
      if (next.done) return undefined;
      const conn = next.value;
      return { conn, transport: (label) => connTransport(conn, label) };
    },
    close: () => listener.close(),
  };
}

/** The same off Deno, on node:net's listener that `listenUnix` uses there. */
async function nodeListener(path: string): Promise<OneListener> {
  const { createServer } = nodeBuiltin<typeof net>("node:net");
  const { listening, ServerListener, socketTransport } = await import(
    "../transports/_node_socket.ts"
  );
  const server = createServer({ allowHalfOpen: true });
  await listening(server, () => server.listen(path));
  let conn: net.Socket | undefined;
  const listener = new ServerListener(server, { transport: "unix", path }, (socket) => {
    conn = socket;
    return socketTransport(socket, `Unix socket ${path}`);
  });
  return {
    next: async () => {
      const transport = await listener.accept().catch(() => undefined);
      return transport && { conn: conn!, transport: () => transport };
    },
    // Not awaited: the connection handed out stays open, its owner's to close.
    close: () => void listener.close(),
  };
}

async function makeTempDir(): Promise<string> {
  if (onDeno()) return await Deno.makeTempDir({ dir: WORKER_SOCKET_PARENT, prefix: "cdw" });
  const fs = nodeBuiltin<typeof import("node:fs/promises")>("node:fs/promises");
  // Owner-only, as Deno's: mkdtemp creates the directory with mode 0700.
  return await fs.mkdtemp(`${WORKER_SOCKET_PARENT}/cdw`);
}

async function removeDir(dir: string): Promise<void> {
  if (onDeno()) return await Deno.remove(dir, { recursive: true }).catch(() => {});
  const fs = nodeBuiltin<typeof import("node:fs/promises")>("node:fs/promises");
  await fs.rm(dir, { recursive: true, force: true }).catch(() => {});
}
