// The worker contract of docs/protocol.md §13, kept by a program that is not Deno: the Python
// peer in `--worker` mode, spawned by spawnWorker over stdio and over the Unix socket it finds
// in CONDUIT_WORKER_SOCKET, calls both ways, and a graceful close after which it exits 0.

import assert from "node:assert/strict";
import { Channel } from "../channel/channel.ts";
import { jsonCodec } from "../codecs/json.ts";
import { listenUnix } from "../transports/unix.ts";
import { spawnWorker, type WorkerTransportKind } from "../workers/spawn_worker.ts";

const DEMO = new URL("./python/demo_server.py", import.meta.url).pathname;

const python = await new Deno.Command("python3", { args: ["--version"], stdout: "null" })
  .output().then((output) => output.success, () => false);
if (!python) console.warn("python3 is missing: skipping the Python worker tests");

interface Demo {
  add(param: { a: number; b: number }): number;
  count(param: { n: number }): AsyncIterable<{ i: number }>;
}

for (const transport of ["stdio", "unix"] as WorkerTransportKind[]) {
  Deno.test({
    name: `interop/python: §13 worker contract over ${transport}`,
    ignore: !python,
    async fn() {
      const started = Promise.withResolvers<unknown>();
      const lines: string[] = [];
      const worker = await spawnWorker<Demo>({ command: "python3", args: [DEMO, "--worker"] }, {
        transport,
        env: { PYTHONDONTWRITEBYTECODE: "1" },
        stderr: (line) => lines.push(line),
        handlers: {
          "ts.echo": (value: unknown) => value,
          "py.started": (param: unknown) => started.resolve(param),
        },
      });
      assert.equal(await worker.remote.add({ a: 2, b: 40 }), 42);
      const items = await Array.fromAsync(worker.remote.count({ n: 3 }));
      assert.deepEqual(items.map((item) => item.i), [0, 1, 2]);
      // The worker calls the parent first thing, and exits 0 only if that worked.
      assert.deepEqual(await started.promise, {
        echoed: { from: "python", n: 7, nested: { ok: true, text: "héllo ✓" } },
      });
      const status = await worker.close();
      assert.equal(status.code, 0, lines.join("\n"));
    },
  });
}

Deno.test({
  name: "interop/python: §13 a socket worker exits when its stdin ends, without a GOODBYE",
  ignore: !python,
  async fn() {
    const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cdw" });
    const listener = await listenUnix(`${dir}/w.sock`);
    const child = new Deno.Command("python3", {
      args: [DEMO, "--worker"],
      env: { CONDUIT_WORKER_SOCKET: `${dir}/w.sock`, PYTHONDONTWRITEBYTECODE: "1" },
      stdin: "piped",
      stdout: "null",
      stderr: "null",
    }).spawn();
    const channel = new Channel(await listener.accept(), {
      codec: jsonCodec(),
      handlers: { "ts.echo": (value: unknown) => value, "py.started": () => {} },
    });
    await channel.opened;
    await child.stdin.close();
    // Generous: only turns a worker that never exits into a failure instead of a hang.
    const guard = setTimeout(() => child.kill("SIGKILL"), 10_000);
    const status = await child.status;
    clearTimeout(guard);
    assert.equal(status.signal, null, "the worker exited by itself");
    await channel.closed.catch(() => {});
    await listener.close();
    await Deno.remove(dir, { recursive: true });
  },
});
