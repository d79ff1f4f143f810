// WorkerPool under hostile use, second look: calls cancelled while they wait, workers stopped
// for idleness, threads that spin, close themselves or post garbage, and retries that race a
// caller's cancel. Real worker processes and threads.

import assert from "node:assert/strict";
import { leakFreeTest, testEnv } from "./_test_processes.ts";
import { threadLeakFreeTest } from "./_test_threads.ts";
import type { HostileApi } from "./_testdata/_hostile_pool_worker.ts";
import { PoolQueueFullError } from "./errors.ts";
import type { WorkerCommand } from "./spawn_worker.ts";
import { WorkerPool as WorkerPoolUnmarked, type WorkerPoolOptions } from "./worker_pool.ts";

/** WorkerPool, with the running test's mark in its workers' environment. */
class WorkerPool<Api extends object> extends WorkerPoolUnmarked<Api> {
  constructor(worker: string | URL | WorkerCommand, options: WorkerPoolOptions<Api> = {}) {
    super(worker, { ...options, env: { ...options.env, ...testEnv() } });
  }
}

const HOSTILE = new URL("./_testdata/_hostile_pool_worker.ts", import.meta.url);

function pool(options: WorkerPoolOptions<HostileApi> = {}): WorkerPool<HostileApi> {
  return new WorkerPool<HostileApi>(HOSTILE, { size: 1, stderr: "discard", ...options });
}

/** Whether `promise` settles within `ms`. */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), ms));
  return Promise.race([promise.then(() => true, () => true), late]).finally(() =>
    clearTimeout(timer)
  );
}

leakFreeTest(
  "pool hostile: a stream call cancelled while it waits leaves the queue, and its place",
  async () => {
    const workers = pool({ size: 1, maxQueued: 1 });
    await workers.started();
    const busy = workers.remote.sleep(300);
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.deepEqual([workers.stats.inFlight, workers.stats.queued], [1, 0]);
    const waiting = workers.remote.count(3);
    assert.equal(workers.stats.queued, 1);
    await waiting.cancel();
    await assert.rejects(Array.fromAsync(waiting));
    // The cancelled call waits no more: it is failed, and the queue has room again.
    assert.equal(workers.stats.queued, 0);
    assert.equal(workers.stats.failed, 1);
    const next = workers.remote.echo("next");
    assert.equal(await next, "next");
    assert.equal(await busy, "slept");
    assert.ok(await settlesWithin(workers.drain(), 2_000), "drain() never resolved");
    const stats = workers.stats;
    assert.deepEqual([stats.queued, stats.inFlight, stats.completed, stats.failed], [0, 0, 2, 1]);
    // close() has no phantom call to wait drainTimeout for.
    const started = performance.now();
    await workers.close();
    assert.ok(performance.now() - started < 2_000, "close() waited for a cancelled call");
  },
);

leakFreeTest(
  "pool hostile: workers stopped for idleness still take calls when maxQueued is 0",
  async () => {
    const workers = pool({ size: 2, maxQueued: 0, idleTimeout: 100 });
    await workers.started();
    assert.equal(await workers.remote.echo(1), 1);
    // Both workers go idle and are stopped.
    const end = Date.now() + 5_000;
    while (workers.stats.workers > 0 && Date.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(workers.stats.workers, 0);
    // The pool still has two places: a worker is started for each call.
    const calls = [workers.remote.echo(2), workers.remote.echo(3)];
    assert.deepEqual(await Promise.all(calls), [2, 3]);
    // A third call at once finds both places taken: refused, as maxQueued 0 says.
    const busy = [workers.remote.sleep(200), workers.remote.sleep(200)];
    await assert.rejects(workers.remote.echo(4), PoolQueueFullError);
    await Promise.all(busy);
    await workers.close();
  },
);

leakFreeTest(
  "pool hostile: a retryable call cancelled as its worker dies is not run again",
  async () => {
    const attempts: number[] = [];
    const cut = Promise.withResolvers<void>();
    const workers = new WorkerPool<HostileApi>(HOSTILE, {
      size: 1,
      stderr: "discard",
      transport: "stdio",
      permissions: { ffi: true },
      retryable: ["vanish"],
      restartDelay: 0,
      handlers: {
        started(attempt: number) {
          attempts.push(attempt);
          if (attempt === 1) setTimeout(() => cut.resolve(), 50);
        },
      },
    });
    const call = workers.remote.vanish(undefined);
    // The worker has cut its connection; the pool learns it is gone only once its exit is
    // known (the worker lingers): the caller gives up on the call meanwhile.
    await cut.promise;
    await call.cancel();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    assert.deepEqual(attempts, [1], "the cancelled call ran again");
    await assert.rejects(Array.fromAsync(call));
    const stats = workers.stats;
    assert.deepEqual([stats.retried, stats.failed, stats.inFlight, stats.queued], [0, 1, 0, 0]);
    await workers.close();
  },
);

leakFreeTest("pool hostile: started() resolves for a pool whose workers idled out", async () => {
  const workers = pool({ size: 2, idleTimeout: 50 });
  await workers.started();
  const end = Date.now() + 5_000;
  while (workers.stats.workers > 0 && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.equal(workers.stats.recycled, 2);
  // Nothing is starting or failing: the pool is as started as it was.
  assert.ok(await settlesWithin(workers.started(), 2_000), "started() never resolved");
  await workers.started();
  assert.equal(await workers.remote.echo("back"), "back");
  await workers.close();
});

threadLeakFreeTest(
  "pool hostile: threads that spin, close themselves or post garbage are replaced",
  async () => {
    const threads = new WorkerPoolUnmarked<HostileApi>(HOSTILE, {
      thread: true,
      size: 1,
      restartDelay: 0,
      cancelGrace: 50,
      drainTimeout: 200,
    });
    await threads.started();
    // A thread that never sees its call's deadline is terminated, and its place given back.
    await assert.rejects(
      threads.remote.spinForever(undefined, { timeout: 100 }),
      { name: "DeadlineExceededError" },
    );
    assert.equal(await threads.remote.echo(1, { timeout: 5_000 }), 1);
    await assert.rejects(threads.remote.closeSelf(undefined), { name: "WorkerExitedError" });
    assert.equal(await threads.remote.echo(2, { timeout: 5_000 }), 2);
    await assert.rejects(threads.remote.garbage(undefined), { name: "WorkerExitedError" });
    assert.equal(await threads.remote.echo(3, { timeout: 5_000 }), 3);
    const stats = threads.stats;
    assert.deepEqual(
      [stats.replaced, stats.crashes, stats.restarts, stats.inFlight, stats.workers],
      [1, 2, 2, 0, 1],
    );
    // close() with a thread stuck in a loop ends within its drainTimeout, and terminates it.
    const stuck = threads.remote.spinForever(undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    await threads.close();
    assert.ok(performance.now() - started < 2_000, "close() waited on a spinning thread");
    await assert.rejects(stuck, { name: "WorkerExitedError" });
  },
);

leakFreeTest(
  "pool hostile: a retried stream never repeats nor loses items; a read one is not retried",
  async () => {
    const workers = pool({ size: 1, retryable: ["partial"], restartDelay: 0 });
    // Read from the start: the items before the crash, then the crash, never a retry.
    const read: number[] = [];
    const error = await (async () => {
      for await (const n of workers.remote.partial({ to: 6, dieAfter: 3 })) read.push(n);
    })().then(() => null, (e) => e);
    assert.deepEqual(read, [1, 2, 3]);
    assert.equal(error?.name, "WorkerExitedError");
    assert.equal(workers.stats.retried, 0);
    // Not read yet when its worker died: run again whole, and read once.
    const later = workers.remote.partial({ to: 6, dieAfter: 3 });
    const end = Date.now() + 5_000;
    while (workers.stats.retried === 0 && Date.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.deepEqual(await Array.fromAsync(later), [1, 2, 3, 4, 5, 6]);
    const stats = workers.stats;
    assert.deepEqual([stats.completed, stats.failed, stats.crashes, stats.inFlight], [1, 1, 2, 0]);
    await workers.close();
  },
);

leakFreeTest(
  "pool hostile: a worker that dies at every start fails the pool and its calls",
  async () => {
    const workers = new WorkerPool<HostileApi>(
      new URL("./_testdata/_hostile_pool_throws.ts", import.meta.url),
      { size: 2, stderr: "discard", restartDelay: 5, maxRestartDelay: 20, maxRestarts: 3 },
    );
    const waiting = workers.remote.echo(1);
    await assert.rejects(workers.started(), { name: "CrashLoopError" });
    await assert.rejects(waiting, { name: "CrashLoopError" });
    await assert.rejects(workers.remote.echo(2), { name: "CrashLoopError" });
    const stats = workers.stats;
    // One crash beyond maxRestarts, no more; a restart still waiting then is called off.
    assert.deepEqual(
      [stats.crashes, stats.workers, stats.starting, stats.queued, stats.failed],
      [4, 0, 0, 0, 2],
    );
    assert.ok(stats.restarts <= 3, `restarts: ${stats.restarts}`);
    await workers.close();
  },
);

leakFreeTest(
  "pool hostile: workers that never start fail the pool, however slowly each fails",
  async () => {
    // Each start fails only after its handshake timeout: fewer than maxRestarts + 1 fit in the
    // restart window, yet no worker will ever serve.
    const workers = new WorkerPool<{ ping(): string }>(
      new URL("./_testdata/_hostile_worker.ts", import.meta.url),
      {
        size: 1,
        args: ["idle"],
        stderr: "discard",
        handshakeTimeout: 150,
        maxRestarts: 2,
        restartDelay: 1,
        restartWindow: 200,
      },
    );
    const call = workers.remote.ping();
    await assert.rejects(call, (error: Error) => {
      assert.equal(error.name, "CrashLoopError", String(error));
      assert.match(String((error.cause as Error)?.message), /serveWorker\(\)/);
      return true;
    });
    await assert.rejects(workers.started(), { name: "CrashLoopError" });
    await workers.close();
  },
);
