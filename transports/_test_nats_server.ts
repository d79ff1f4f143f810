// A real nats-server for tests and benchmarks: started on a random loopback port, with an
// optional config for small limits, and stopped (process awaited, temp files removed) after.

import { connect, type NatsConnection } from "@nats-io/transport-node";

/** Whether the nats-server binary runs here; tests skip with a message naming it when not. */
export const haveNatsServer: boolean = await (async () => {
  try {
    const { success } = await new Deno.Command("nats-server", {
      args: ["--version"],
      stdout: "null",
      stderr: "null",
    }).output();
    return success;
  } catch {
    return false;
  }
})();

if (!haveNatsServer) {
  console.warn("nats-server is not installed: the NATS transport tests are skipped");
}

/** A running nats-server. */
export interface NatsServer extends AsyncDisposable {
  /** `127.0.0.1:port`, for `connect({ servers })`. */
  readonly url: string;
  readonly port: number;
  /** The server's process id (for its memory figures). */
  readonly pid: number;
  /** Opens a client connection to it (closed by `stop()` if still open). */
  connect(): Promise<NatsConnection>;
  /** Closes the clients it opened, stops the server and removes its files. */
  stop(): Promise<void>;
}

/**
 * Starts nats-server on a random loopback port. `config` is the body of a config file
 * (e.g. `max_payload: 65536`); `fixedPort` a fixed port (to start a server again where one died).
 */
export async function startNatsServer(config = "", fixedPort = -1): Promise<NatsServer> {
  const dir = await Deno.makeTempDir({ prefix: "conduit-nats-" });
  await Deno.writeTextFile(`${dir}/server.conf`, config);
  const child = new Deno.Command("nats-server", {
    args: ["-a", "127.0.0.1", "-p", String(fixedPort), "-c", `${dir}/server.conf`],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const lines = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let log = "";
  let port = 0;
  while (port === 0) {
    const { done, value } = await lines.read();
    if (done) {
      await child.status;
      await Deno.remove(dir, { recursive: true });
      throw new Error(`nats-server exited before listening:\n${log}`);
    }
    log += value;
    const match = log.match(/Listening for client connections on [^\s]*:(\d+)/);
    if (match) port = Number(match[1]);
  }
  // Keep reading its log, so that a full pipe never blocks it.
  const draining = (async () => {
    for (;;) {
      const { done } = await lines.read();
      if (done) return;
    }
  })();
  const url = `127.0.0.1:${port}`;
  const clients: NatsConnection[] = [];
  let stopping: Promise<void> | undefined;
  const stop = () =>
    stopping ??= (async () => {
      await Promise.all(clients.map((nc) => nc.isClosed() ? undefined : nc.close()));
      try {
        child.kill("SIGTERM");
      } catch {
        // Killed already (a test of a server that dies).
      }
      await child.status;
      await draining;
      await Deno.remove(dir, { recursive: true });
    })();
  return {
    url,
    port,
    pid: child.pid,
    async connect() {
      const nc = await connect({ servers: url });
      clients.push(nc);
      return nc;
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * Registers a test named `name` that gets a fresh nats-server (started with `config`, stopped
 * after); skipped where nats-server is missing (the import warned, naming it).
 */
export function natsServerTest(
  name: string,
  fn: (server: NatsServer) => Promise<void>,
  config = "",
): void {
  Deno.test({
    name,
    ignore: !haveNatsServer,
    async fn() {
      const server = await startNatsServer(config);
      try {
        await fn(server);
      } finally {
        await server.stop();
      }
    },
  });
}
