// Thread workers on each runtime, registered by each runner beside _cases.ts:
// `spawnWorker(url, { thread: true })` runs the worker module as a thread of this process (a Web
// Worker on Deno and Bun, a `node:worker_threads` Worker on Node).

import assert from "node:assert/strict";
import { runtimeName } from "../_runtime.ts";
import { spawnWorker } from "../workers/spawn_worker.ts";
import { WorkerPool } from "../workers/worker_pool.ts";
import { WorkerExitedError } from "../workers/errors.ts";
import type { ParentApi, WorkerApi } from "./_worker.ts";
import { checkWorkerCalls, range, type RuntimeCase, runToEnd } from "./_cases.ts";
import { openChannel } from "../channel/mod.ts";
import { structuredCodec } from "../codecs/structured.ts";
import type { RingApi } from "./_ring_thread.ts";
import { sharedRingPair, sharedRingTransport } from "../transports/shared_ring.ts";
import { startThread } from "../_thread.ts";

/** The thread worker cases every runner registers, in order. */
export const threadCases: RuntimeCase[] = [];

const workerModule = new URL("./_worker.ts", import.meta.url);
const runtime = runtimeName();
const parent: ParentApi = {
  double: (x) => 2 * x,
  hang: () => new Promise<never>(() => {}),
};

function add(name: string, fn: () => Promise<void>): void {
  threadCases.push({ name: `thread worker on ${runtime}: ${name}`, fn });
}

if (runtime !== "deno") {
  add(`permissions are a TypeError: a ${runtime} thread has its process's access`, async () => {
    await assert.rejects(
      spawnWorker<WorkerApi>(workerModule, { thread: true, permissions: { read: true } }),
      (error: unknown) => {
        assert.ok(error instanceof TypeError, String(error));
        assert.match(
          error.message,
          new RegExp(`permissions cannot be used with thread: true on ${runtime}`),
        );
        return true;
      },
    );
  });
}

add("calls, streams both ways, a call-back, a typed error, a clean close", async () => {
  const worker = await spawnWorker<WorkerApi>(workerModule, {
    thread: true,
    handlers: parent,
  });
  try {
    assert.equal(worker.thread, true);
    await checkWorkerCalls(worker, runtime);
    assert.equal(await worker.remote.callParent(21), 42);
  } finally {
    assert.deepEqual({ ...await worker.close() }, { success: true, code: 0, signal: null });
  }
  await assert.rejects(worker.remote.echo(1), WorkerExitedError);
});

add("a worker that exits mid-call fails the call with WorkerExitedError", async () => {
  const worker = await spawnWorker<WorkerApi>(workerModule, { thread: true });
  try {
    assert.equal(await worker.remote.echo(1), 1);
    await assert.rejects(worker.remote.crash(3), WorkerExitedError);
    await worker.exited;
  } finally {
    await worker.close();
  }
});

add("kill() ends it; its status reads as SIGKILL", async () => {
  const worker = await spawnWorker<WorkerApi>(workerModule, { thread: true });
  assert.equal(await worker.remote.echo("alive"), "alive");
  const status = await worker.kill();
  assert.deepEqual({ ...status }, { success: false, code: 137, signal: "SIGKILL" });
  await assert.rejects(worker.remote.echo(1), WorkerExitedError);
});

add("a pool of threads spreads calls and replaces a worker that exited", async () => {
  const pool = new WorkerPool<WorkerApi>(workerModule, { size: 2, thread: true });
  try {
    const answers = await Promise.all(range(1, 20).map((n) => pool.remote.echo(n)));
    assert.deepEqual(answers, range(1, 20));
    await assert.rejects(pool.remote.crash(4), WorkerExitedError);
    assert.equal(await pool.remote.runtime(), runtime);
    assert.ok(pool.stats.crashes >= 1, JSON.stringify(pool.stats));
  } finally {
    await pool.close();
  }
});

add("a shared ring to a thread: calls and a stream over SharedArrayBuffers", async () => {
  const thread = startThread(new URL("./_ring_thread.ts", import.meta.url), { name: "ring" });
  const [mine, theirs] = sharedRingPair();
  thread.postMessage(theirs, [theirs.port]);
  const channel = await openChannel<RingApi>(sharedRingTransport(mine, { worker: thread }), {
    codec: structuredCodec(),
  });
  try {
    const big = new Uint8Array(3 << 20).fill(5); // past half the ring: through its port
    assert.deepEqual(await channel.remote.echo({ text: "ring", big }), { text: "ring", big });
    assert.deepEqual(await Array.fromAsync(channel.remote.count(300)), range(1, 300));
  } finally {
    await channel.close();
    thread.terminate();
  }
});

add("unref() lets a program end with its thread worker open", async () => {
  // A thread that kept the program alive would hold it for good.
  const { stdout } = await runToEnd("./_thread_unref_child.ts");
  assert.match(stdout, /unref'd/);
});
