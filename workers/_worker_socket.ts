// The Unix socket a worker connects to (`transport: "unix"`): a listener under a fresh
// owner-only temporary directory, the one connection accepted unless the worker exits or the
// time runs out first, and everything removed afterwards.

import { ConnectionClosedError } from "../channel/errors.ts";
import { connTransport } from "../transports/_conn_transport.ts";
import type { Transport } from "../transports/types.ts";

/** How long to wait for a worker to connect when no handshake timeout is given: 10 s. */
const DEFAULT_ACCEPT_TIMEOUT = 10_000;

/** A listener waiting for one worker. */
export class WorkerSocket {
  /** The socket's path, for the worker's environment. */
  readonly path: string;
  readonly #dir: string;
  // A plain Deno listener (the directory is fresh and ours), so that the accepted connection
  // stays at hand for ref()/unref().
  readonly #listener: Deno.Listener<Deno.UnixConn>;
  /** The worker's connection, once accepted. */
  accepted: Deno.UnixConn | undefined;

  private constructor(dir: string, path: string, listener: Deno.Listener<Deno.UnixConn>) {
    this.#dir = dir;
    this.path = path;
    this.#listener = listener;
  }

  /** Listens on a socket in a new temporary directory. */
  static async open(): Promise<WorkerSocket> {
    const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cdw" });
    const path = `${dir}/w.sock`;
    try {
      return new WorkerSocket(dir, path, Deno.listen({ transport: "unix", path }));
    } catch (error) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      throw error;
    }
  }

  /**
   * Accepts the worker's connection, unless `exited` settles first or `timeout` passes.
   *
   * @throws {ConnectionClosedError} When the worker exited, did not connect in time, or the
   * listener closed.
   */
  async accept(exited: Promise<unknown>, timeout: number | undefined): Promise<Transport> {
    const limit = timeout ?? DEFAULT_ACCEPT_TIMEOUT;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const iterator = this.#listener[Symbol.asyncIterator]();
    try {
      const next = await Promise.race([
        iterator.next(),
        exited.then(() => {
          throw new ConnectionClosedError("The worker exited before it connected");
        }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(new ConnectionClosedError(`The worker did not connect within ${limit} ms`)),
            limit,
          );
        }),
      ]);
      if (next.done) throw new ConnectionClosedError("The listener closed");
      this.accepted = next.value;
      return connTransport(next.value, `Unix socket ${this.path}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stops listening and removes the directory. */
  async close(): Promise<void> {
    try {
      this.#listener.close();
    } catch {
      // Closed already.
    }
    await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
  }
}
