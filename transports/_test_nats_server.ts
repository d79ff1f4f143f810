// A real nats-server for tests and benchmarks: started on a random loopback port, with an
// optional config for small limits, and stopped (process awaited, temp files removed) after.
// Starting and stopping one runs on Deno, Node and Bun (runtimes/_nats_cases.ts); the test
// registration and the cluster are Deno's.

import { connect, type NatsConnection } from "@nats-io/transport-node";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnChild } from "../_spawn.ts";

/** Whether the nats-server binary runs here; tests skip with a message naming it when not. */
export const haveNatsServer: boolean = await (async () => {
  try {
    const child = spawnChild("nats-server", {
      args: ["--version"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    });
    return (await child.status).success;
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
  const dir = await mkdtemp(join(tmpdir(), "conduit-nats-"));
  await writeFile(`${dir}/server.conf`, config);
  const child = spawnChild("nats-server", {
    args: ["-a", "127.0.0.1", "-p", String(fixedPort), "-c", `${dir}/server.conf`],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  });
  const lines = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let log = "";
  let port = 0;
  while (port === 0) {
    const { done, value } = await lines.read();
    if (done) {
      await child.status;
      await rm(dir, { recursive: true });
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
      await rm(dir, { recursive: true });
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

/** A cluster of nats-servers on loopback, routed to each other. */
export interface NatsCluster extends AsyncDisposable {
  readonly nodes: NatsServer[];
  /** Every node's `127.0.0.1:port`, for `connect({ servers })`. */
  readonly urls: string[];
  /** Stops every node that still runs. */
  stop(): Promise<void>;
}

/** Starts `size` nats-servers routed into one cluster, and waits until each sees the others. */
export async function startNatsCluster(size: number): Promise<NatsCluster> {
  const routePorts = freePorts(size);
  const nodes: NatsServer[] = [];
  for (let i = 0; i < size; i++) {
    const routes = routePorts.filter((_, j) => j !== i).map((p) => `"nats-route://127.0.0.1:${p}"`);
    nodes.push(
      await startNatsServer(
        `server_name: "n${i}"\ncluster {\n  name: "conduit-test"\n  listen: "127.0.0.1:${
          routePorts[i]
        }"\n  routes: [${routes.join(", ")}]\n}\n`,
      ),
    );
  }
  // Routes form within a second or two: wait until a message published on one node reaches a
  // subscriber on every other.
  const probes = await Promise.all(nodes.map((node) => node.connect()));
  for (let i = 0; i < size; i++) {
    for (let j = 0; j < size; j++) {
      if (i === j) continue;
      const subject = `cluster.probe.${i}.${j}`;
      const got = Promise.withResolvers<void>();
      const sub = probes[j].subscribe(subject, { callback: () => got.resolve() });
      await probes[j].flush();
      const timer = setInterval(() => probes[i].publish(subject), 50);
      const deadline = setTimeout(() => got.reject(new Error("the cluster did not form")), 10_000);
      await got.promise.finally(() => (clearInterval(timer), clearTimeout(deadline)));
      sub.unsubscribe();
    }
  }
  await Promise.all(probes.map((nc) => nc.close()));
  const stop = () => Promise.all(nodes.map((node) => node.stop())).then(() => {});
  return { nodes, urls: nodes.map((node) => node.url), stop, [Symbol.asyncDispose]: stop };
}

/** Ports free on loopback now (held open together, so they differ, then released). */
function freePorts(count: number): number[] {
  const listeners = Array.from(
    { length: count },
    () => Deno.listen({ hostname: "127.0.0.1", port: 0 }),
  );
  const ports = listeners.map((listener) => (listener.addr as Deno.NetAddr).port);
  for (const listener of listeners) listener.close();
  return ports;
}
