// WorkerPool with thread workers: calls spread over real Web Workers, a crashed thread is
// replaced, and close() terminates every thread.

import assert from "node:assert/strict";
import type { EchoApi } from "./_testdata/echo_worker.ts";
import { threadLeakFreeTest } from "./_test_threads.ts";
import { WorkerExitedError } from "./errors.ts";
import { WorkerPool } from "./worker_pool.ts";

const ECHO = new URL("./_testdata/echo_worker.ts", import.meta.url);

threadLeakFreeTest("thread pool: calls and streams over two threads, then close", async () => {
  await using pool = new WorkerPool<EchoApi>(ECHO, { thread: true, size: 2 });
  await pool.started();
  assert.equal(pool.stats.workers, 2);
  const results = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => pool.remote.echo(n)));
  assert.deepEqual(results, [1, 2, 3, 4, 5, 6]);
  assert.deepEqual(await Array.fromAsync(pool.remote.count(3)), [1, 2, 3]);
  // Two slow calls at once run on both threads: together they take one call's time.
  const started = performance.now();
  await Promise.all([pool.remote.sleep(300), pool.remote.sleep(300)]);
  assert.ok(performance.now() - started < 550, "the two calls did not run side by side");
  assert.equal(pool.stats.completed, 9);
});

threadLeakFreeTest(
  "thread pool: a crashed thread is replaced; a retryable call runs again",
  async () => {
    const pool = new WorkerPool<EchoApi>(ECHO, {
      thread: true,
      size: 1,
      retryable: ["echo"],
      restartDelay: 10,
    });
    const error = await pool.remote.crash("boom").then(() => null, (e) => e);
    assert.ok(error instanceof WorkerExitedError);
    assert.equal(error.thread, true);
    assert.equal(await pool.remote.echo("back"), "back");
    assert.equal(pool.stats.crashes, 1);
    assert.equal(pool.stats.restarts, 1);
    await pool.close();
  },
);

Deno.test("thread pool: options only a process takes are refused at construction", () => {
  assert.throws(
    () => new WorkerPool<EchoApi>(ECHO, { thread: true, size: 1, denoArgs: ["--quiet"] }),
    (error: Error) => error instanceof TypeError && /denoArgs/.test(error.message),
  );
});
