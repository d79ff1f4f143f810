// Default worker options, with real worker processes: the structured codec keeps what the
// types promise, and no default deadline ends long work.
import assert from "node:assert/strict";
import type { CallContext } from "../channel/call_context.ts";
import { DEFAULT_CALL_TIMEOUT } from "../channel/channel.ts";
import { DeadlineExceededError } from "../channel/errors.ts";
import { CodecError } from "../errors.ts";
import { leakFreeTest, testEnv } from "./_test_processes.ts";
import type { DefaultsApi, DefaultsParentApi } from "./_testdata/defaults_worker.ts";
import { spawnWorker, type SpawnWorkerOptions } from "./spawn_worker.ts";
import { DEFAULT_WORKER_CALL_TIMEOUT } from "./worker_env.ts";
import { WorkerPool } from "./worker_pool.ts";
import type { ProcessWatchApi } from "./_testdata/process_watch_worker.ts";

const WORKER = new URL("./_testdata/defaults_worker.ts", import.meta.url);
const parent: DefaultsParentApi = {
  deadline: (_: undefined, ctx: CallContext) => ctx.deadline ?? null,
};

function spawn(options: SpawnWorkerOptions<DefaultsParentApi> = {}) {
  return spawnWorker<DefaultsApi, DefaultsParentApi>(WORKER, {
    handlers: parent,
    ...options,
    env: testEnv(),
  });
}

leakFreeTest(
  "worker defaults: Date, Map, Set, bigint, typed arrays cross as they are",
  async () => {
    await using worker = await spawn();
    const value = {
      at: new Date("2024-05-06T07:08:09.010Z"),
      byName: new Map<string, unknown>([["a", 1n << 70n], ["b", new Set(["x", 2])]]),
      ids: new Set([1, 2, 3]),
      big: -(1n << 64n),
      bytes: new Uint8Array([0, 1, 254, 255]),
      floats: new Float64Array([0.5, -0, NaN]),
      missing: undefined,
      none: null,
      nested: [[{ deep: [new Date(0)] }]],
    };
    assert.deepStrictEqual(await worker.remote.echo(value), value);
    const bytes = await worker.remote.echo(new Uint8Array(1 << 20).fill(7));
    assert.ok(bytes instanceof Uint8Array);
    assert.equal(bytes.length, 1 << 20);
    assert.equal(bytes[12345], 7);
  },
);

leakFreeTest("worker defaults: what cannot cross is a CodecError naming its path", async () => {
  await using worker = await spawn();
  class Point {
    x = 1;
  }
  await assert.rejects(
    worker.remote.echo({ items: [{ callback: () => 1 }] }),
    (error) => error instanceof CodecError && error.message.includes("$.items[0].callback"),
  );
  await assert.rejects(
    worker.remote.echo({ at: new Point() }),
    (error) => error instanceof CodecError && error.message.includes("$.at"),
  );
  // The channel is still good.
  assert.equal(await worker.remote.echo(1), 1);
});

leakFreeTest("worker defaults: calls carry no deadline either way", async () => {
  assert.equal(DEFAULT_WORKER_CALL_TIMEOUT, Infinity);
  assert.equal(DEFAULT_CALL_TIMEOUT, 60_000, "network channels keep theirs");
  await using worker = await spawn();
  assert.equal(await worker.remote.deadline(undefined), null);
  assert.equal(await worker.remote.parentDeadline(undefined), null);
  // An explicit undefined is the default too.
  await using other = await spawn({ defaultTimeout: undefined });
  assert.equal(await other.remote.deadline(undefined), null);
});

leakFreeTest("worker defaults: a pool's calls carry no deadline", async () => {
  const pool = new WorkerPool<DefaultsApi, DefaultsParentApi>(WORKER, {
    size: 1,
    handlers: parent,
    env: testEnv(),
  });
  try {
    assert.equal(await pool.remote.deadline(undefined), null);
  } finally {
    await pool.close();
  }
});

leakFreeTest("worker defaults: defaultTimeout still ends a slow stream when asked", async () => {
  await using worker = await spawn({ defaultTimeout: 300 });
  const deadline = await worker.remote.deadline(undefined);
  assert.ok(typeof deadline === "number" && deadline > Date.now() - 1_000);
  const items: number[] = [];
  await assert.rejects(
    (async () => {
      for await (const item of worker.remote.slowCount({ count: 100, ms: 50 })) items.push(item);
    })(),
    DeadlineExceededError,
  );
  assert.ok(items.length > 0 && items.length < 100, `${items.length} items`);
});

Deno.test("worker defaults: a Unix socket where the parent may make one, else stdio", async () => {
  const parentModule = new URL("./_testdata/default_transport_parent.ts", import.meta.url);
  const run = async (flags: string[], args: string[] = []) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-prompt", ...flags, parentModule.href, ...args],
      stderr: "inherit",
    }).output();
    assert.ok(out.success, `the parent with ${flags.join(" ")} failed`);
    return JSON.parse(new TextDecoder().decode(out.stdout));
  };
  const socket = ["--allow-run", "--allow-read=/tmp", "--allow-write=/tmp", "--allow-net"];
  assert.deepEqual(await run(socket), { chosen: "unix", used: "unix", code: 0 });
  assert.deepEqual(await run(["-A"]), { chosen: "unix", used: "unix", code: 0 });
  // Least privilege for the parent: without the socket's permissions the worker gets stdio.
  assert.deepEqual(await run(["--allow-run"]), { chosen: "stdio", used: "stdio", code: 0 });
  assert.deepEqual(await run(socket.slice(0, 3)), { chosen: "stdio", used: "stdio", code: 0 });
  // Asked for a socket it may not make: the error says which option, and what it needs.
  const { error } = await run(["--allow-run"], ["unix"]);
  assert.match(error, /^NotCapable: Requires (read|write) access to "\/tmp".*transport: "unix"/);
  assert.match(error, /--allow-read=\/tmp --allow-write=\/tmp --allow-net.*transport: "stdio"/);
});

leakFreeTest("worker defaults: a Deno worker starts without Deno's Node layer", async () => {
  for (const transport of ["stdio", "unix"] as const) {
    await using worker = await spawnWorker<ProcessWatchApi>(
      new URL("./_testdata/process_watch_worker.ts", import.meta.url),
      { transport, env: testEnv() },
    );
    // Reading globalThis.process on Deno starts its Node layer (~20 ms of a worker's start).
    assert.deepEqual(await worker.remote.processReads(), { reads: 0, watched: true }, transport);
  }
});
