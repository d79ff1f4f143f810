import assert from "node:assert/strict";
import fc from "fast-check";
import { leakFreeTest, testEnv, waitUntilGone } from "./_test_processes.ts";
import type { EchoApi } from "./_testdata/echo_worker.ts";
import {
  CrashLoopError,
  PoolClosedError,
  PoolQueueFullError,
  WorkerExitedError,
} from "./errors.ts";
import type { WorkerCommand } from "./spawn_worker.ts";
import { WorkerPool as WorkerPoolUnmarked, type WorkerPoolOptions } from "./worker_pool.ts";
import { RestartPolicy } from "./_dispatcher.ts";

/** WorkerPool, with the running test's mark in its workers' environment. */
class WorkerPool<Api extends object> extends WorkerPoolUnmarked<Api> {
  constructor(worker: string | URL | WorkerCommand, options: WorkerPoolOptions<Api> = {}) {
    super(worker, { ...options, env: { ...options.env, ...testEnv() } });
  }
}

const ECHO = new URL("./_testdata/echo_worker.ts", import.meta.url);
const MISSING = new URL("./_testdata/no_such_worker.ts", import.meta.url);

function pool(options: WorkerPoolOptions<EchoApi> = {}): WorkerPool<EchoApi> {
  return new WorkerPool<EchoApi>(ECHO, { size: 2, stderr: "discard", ...options });
}

/** Closes the pool and checks that none of the workers it ever ran is left. */
async function closeAndCheck(pool: WorkerPool<EchoApi>, pids: Iterable<number>): Promise<void> {
  await pool.close();
  await waitUntilGone([...pids]);
}

leakFreeTest("WorkerPool: typed calls spread over the least-loaded workers", async () => {
  const workers = pool({ size: 2 });
  await workers.started();
  assert.equal(workers.stats.workers, 2);
  const pids = await Promise.all([1, 2, 3, 4].map(() => workers.remote.slowPid(100)));
  const counts = new Map<number, number>();
  for (const pid of pids) counts.set(pid, (counts.get(pid) ?? 0) + 1);
  // One call per worker at a time: two workers took two calls each.
  assert.deepEqual([...counts.values()], [2, 2]);
  assert.deepEqual(await workers.remote.echo({ deep: [1, "x"] }), { deep: [1, "x"] });
  const stats = workers.stats;
  assert.equal(stats.completed, 5);
  assert.equal(stats.inFlight, 0);
  assert.equal(stats.queued, 0);
  await closeAndCheck(workers, counts.keys());
});

leakFreeTest("WorkerPool: a stream from a pooled worker", async () => {
  const workers = pool({ size: 1 });
  assert.deepEqual(await Array.fromAsync(workers.remote.count(5)), [1, 2, 3, 4, 5]);
  // Breaking out early releases the worker.
  for await (const n of workers.remote.count(1_000_000)) if (n === 3) break;
  assert.equal(await workers.remote.echo("free"), "free");
  assert.equal(workers.stats.inFlight, 0);
  const pid = await workers.remote.pid();
  await closeAndCheck(workers, [pid]);
});

leakFreeTest(
  "WorkerPool: a crashed worker is restarted; its calls fail unless retryable",
  async () => {
    const workers = pool({ size: 1, concurrency: 3, retryable: ["sleep"], restartDelay: 10 });
    const first = await workers.remote.pid();
    const retried = workers.remote.sleep(200);
    const notRetried = workers.remote.slowPid(200);
    const crash = workers.remote.exit(7);
    for (const call of [crash, notRetried]) {
      const error = await call.then(() => null, (e) => e);
      assert.ok(error instanceof WorkerExitedError, String(error));
      assert.equal(error.code, 7);
    }
    assert.equal(await retried, "slept");
    const second = await workers.remote.pid();
    assert.notEqual(second, first);
    const stats = workers.stats;
    assert.equal(stats.crashes, 1);
    assert.equal(stats.restarts, 1);
    assert.equal(stats.retried, 1);
    assert.equal(stats.failed, 2);
    await closeAndCheck(workers, [first, second]);
  },
);

leakFreeTest("WorkerPool: a crash loop fails the pool instead of spinning", async () => {
  const broken = new WorkerPool<EchoApi>(MISSING, {
    size: 2,
    stderr: "discard",
    restartDelay: 5,
    maxRestarts: 3,
  });
  const call = broken.remote.echo(1);
  const error = await broken.started().then(() => null, (e) => e);
  assert.ok(error instanceof CrashLoopError, String(error));
  assert.equal(error.crashes, 4);
  assert.equal(error.maxRestarts, 3);
  assert.ok(error.cause instanceof WorkerExitedError);
  assert.match(error.cause.message, /no_such_worker\.ts/);
  await assert.rejects(call, CrashLoopError);
  await assert.rejects(broken.remote.echo(2), CrashLoopError);
  assert.equal(broken.stats.crashes, 4);
  assert.equal(broken.stats.workers + broken.stats.starting, 0);
  await broken.close();
});

leakFreeTest("WorkerPool: workers this process cannot spawn fail the pool at once", async () => {
  const impossible = new WorkerPool<EchoApi>({ command: "/no/such/program" }, { size: 2 });
  const call = impossible.remote.echo(1);
  await assert.rejects(impossible.started(), Deno.errors.NotFound);
  await assert.rejects(call, Deno.errors.NotFound);
  assert.equal(impossible.stats.crashes, 0);
  await impossible.close();
});

leakFreeTest("WorkerPool: a bounded queue with backpressure, then drain", async () => {
  const workers = pool({ size: 1, maxQueued: 2 });
  const calls = [1, 2, 3].map((n) => workers.remote.slowPid(30 + n));
  // One call can run, two can wait: the fourth is refused.
  await assert.rejects(workers.remote.echo(4), PoolQueueFullError);
  await workers.waitForRoom();
  assert.ok(workers.stats.queued < 2);
  const late = workers.remote.echo("late");
  await workers.drain();
  assert.equal(workers.stats.inFlight + workers.stats.queued, 0);
  assert.equal(await late, "late");
  const pids = await Promise.all(calls);
  await closeAndCheck(workers, pids);
});

leakFreeTest("WorkerPool: close() finishes queued calls, then refuses new ones", async () => {
  const workers = pool({ size: 1 });
  const calls = [1, 2, 3].map(() => workers.remote.slowPid(20));
  const closing = workers.close();
  await assert.rejects(workers.remote.echo(1), PoolClosedError);
  const pids = await Promise.all(calls);
  await closing;
  assert.equal(workers.stats.completed, 3);
  await waitUntilGone(pids);
});

leakFreeTest("WorkerPool: workers are recycled after maxCallsPerWorker and when idle", async () => {
  const workers = pool({ size: 1, maxCallsPerWorker: 2 });
  const pids = [];
  for (let i = 0; i < 4; i++) pids.push(await workers.remote.pid());
  assert.equal(pids[0], pids[1]);
  assert.notEqual(pids[1], pids[2]);
  assert.equal(pids[2], pids[3]);
  assert.equal(workers.stats.crashes, 0);
  assert.ok(workers.stats.recycled >= 1);
  await closeAndCheck(workers, pids);

  const idle = pool({ size: 1, idleTimeout: 50 });
  const before = await idle.remote.pid();
  await waitUntilGone([before]);
  assert.equal(idle.stats.workers, 0);
  const after = await idle.remote.pid();
  assert.notEqual(after, before);
  await closeAndCheck(idle, [after]);
});

leakFreeTest("WorkerPool: an aborted signal takes a call out of the queue", async () => {
  const workers = pool({ size: 1 });
  const busy = workers.remote.slowPid(100);
  const controller = new AbortController();
  const queued = workers.remote.echo("never", { signal: controller.signal });
  controller.abort(new Error("changed my mind"));
  await assert.rejects(queued, /changed my mind/);
  const pid = await busy;
  assert.equal(workers.stats.completed, 1);
  await closeAndCheck(workers, [pid]);
});

Deno.test("WorkerPool: options out of range are refused", () => {
  assert.throws(
    () => new WorkerPool(ECHO, { size: 0 }),
    /size must be an integer from 1 to 9007199254740991, got 0/,
  );
  assert.throws(() => new WorkerPool(ECHO, { concurrency: 1.5 }), RangeError);
  assert.throws(() => new WorkerPool(ECHO, { restartDelay: -1 }), RangeError);
});

/** Polls `check` until it holds (a pool's counters change as frames arrive). */
async function until(check: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`Gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

leakFreeTest(
  "WorkerPool: every in-flight retryable call of a SIGKILLed worker is retried",
  async () => {
    const workers = pool({ size: 1, concurrency: 20, retryable: ["slowPid"], restartDelay: 10 });
    const killed = await workers.remote.pid();
    const calls = Array.from({ length: 20 }, () => workers.remote.slowPid(300));
    await until(() => workers.stats.inFlight === 20, "20 calls in flight");
    Deno.kill(killed, "SIGKILL");
    const pids = await Promise.all(calls);
    // All 20 ran again, on the worker that replaced the killed one.
    assert.equal(new Set(pids).size, 1);
    assert.notEqual(pids[0], killed);
    const stats = workers.stats;
    assert.equal(stats.retried, 20);
    assert.equal(stats.failed, 0);
    assert.equal(stats.completed, 21);
    assert.equal(stats.crashes, 1);
    assert.equal(stats.restarts, 1);
    await closeAndCheck(workers, [killed, pids[0]]);
  },
);

leakFreeTest("WorkerPool: a storm of 20 SIGKILLs rejects no retryable call", async () => {
  const kills = 20;
  const workers = pool({
    size: 2,
    concurrency: 4,
    retryable: ["slowPid", "pid"],
    maxAttempts: kills + 1,
    maxRestarts: kills + 1,
    restartDelay: 1,
    maxRestartDelay: 10,
  });
  const rejections: unknown[] = [];
  const calls: Promise<unknown>[] = [];
  const seen = new Set<number>();
  for (let i = 0; i < kills; i++) {
    const victim = await workers.remote.pid();
    seen.add(victim);
    for (let j = 0; j < 6; j++) {
      calls.push(workers.remote.slowPid(20 + j).catch((error) => rejections.push(error)));
    }
    await until(() => workers.stats.inFlight > 0, "calls in flight");
    try {
      Deno.kill(victim, "SIGKILL");
    } catch {
      // The victim was replaced meanwhile (its call had finished before another crash).
    }
  }
  await Promise.all(calls);
  assert.deepEqual(rejections, []);
  const stats = workers.stats;
  assert.equal(stats.failed, 0);
  assert.equal(stats.completed, calls.length + kills);
  assert.ok(stats.crashes >= kills - 1, `${stats.crashes} crashes`);
  // Each retry is one call run again: never more than there were calls in flight to crash.
  assert.ok(stats.retried <= stats.crashes * 8, `${stats.retried} retries`);
  await workers.close();
  await waitUntilGone([...seen]);
});

leakFreeTest(
  "WorkerPool: a call's face is chosen by its first use, even after an await",
  async () => {
    const workers = pool({ size: 1, concurrency: 4 });
    const stream = workers.remote.count(5);
    const value = workers.remote.echo("later");
    const misread = workers.remote.echo("not a stream");
    const awaitedStream = workers.remote.count(3);
    // The calls run meanwhile: the stream's items wait for their reader.
    await until(() => workers.stats.completed === 4, "the four calls to finish");
    assert.deepEqual(await Array.fromAsync(stream), [1, 2, 3, 4, 5]);
    assert.equal(await value, "later");
    // Misuse is a catchable error, and nothing is left unhandled behind it.
    const misreadStream = misread as unknown as AsyncIterable<unknown>;
    await assert.rejects(Array.fromAsync(misreadStream), /returned a single value, not a stream/);
    await assert.rejects(Promise.resolve(awaitedStream), /returned a stream/);
    const pid = await workers.remote.pid();
    await closeAndCheck(workers, [pid]);
  },
);

leakFreeTest("WorkerPool: a deadline error says the timeout the caller set", async () => {
  const workers = pool({ size: 1, concurrency: 2 });
  await workers.started();
  // On a worker at once: its target call gets what is left of the deadline, a fraction of a
  // millisecond less than the caller set.
  const direct = workers.remote.slowPid(5_000, { timeout: 300 });
  const other = workers.remote.slowPid(5_000, { timeout: 350 });
  // Queued behind both until their deadlines free the worker, then sent with ~50 ms left.
  const queued = workers.remote.slowPid(5_000, { timeout: 400 });
  for (
    const [call, timeout, method] of [
      [direct, 300, "slowPid"],
      [other, 350, "slowPid"],
      [queued, 400, "slowPid"],
    ] as const
  ) {
    await assert.rejects(call, {
      name: "DeadlineExceededError",
      message: `Call to "${method}" exceeded its deadline of ${timeout} ms`,
    });
  }
  assert.ok(workers.stats.workers <= 1);
  await workers.close();
});

const OPTIONS = {
  restartDelay: 100,
  maxRestartDelay: 1_000,
  maxRestarts: 5,
  restartWindow: 30_000,
};

Deno.test("RestartPolicy: the delay doubles with each crash in the window, up to the maximum", () => {
  const policy = new RestartPolicy({ ...OPTIONS, maxRestarts: 10 });
  const delays: number[] = [];
  for (let now = 0; now < 6_000; now += 1_000) {
    const decision = policy.crashed(now);
    assert.ok(decision.restart);
    delays.push(decision.delay);
  }
  assert.deepEqual(delays, [100, 200, 400, 800, 1_000, 1_000]);
});

Deno.test("RestartPolicy: one crash more than maxRestarts within the window is a crash loop", () => {
  const policy = new RestartPolicy(OPTIONS);
  for (let i = 1; i <= 5; i++) {
    assert.deepEqual(policy.crashed(i * 10), {
      restart: true,
      delay: Math.min(100 * 2 ** (i - 1), 1_000),
      crashes: i,
    });
  }
  assert.deepEqual(policy.crashed(60), { restart: false, crashes: 6, window: 30_000 });
});

Deno.test("RestartPolicy: crashes older than the window are forgotten, and the backoff resets", () => {
  const policy = new RestartPolicy(OPTIONS);
  for (let i = 0; i < 5; i++) assert.ok(policy.crashed(i).restart);
  // 30 s after the first crash it has left the window; the others are still in it.
  assert.deepEqual(policy.crashed(30_000), { restart: true, delay: 1_000, crashes: 5 });
  // Long after all of them, a crash is a first crash again.
  assert.deepEqual(policy.crashed(100_000), { restart: true, delay: 100, crashes: 1 });
});

Deno.test("RestartPolicy: maxRestarts 0 gives up at the first crash; a zero window counts one", () => {
  assert.deepEqual(new RestartPolicy({ ...OPTIONS, maxRestarts: 0 }).crashed(0), {
    restart: false,
    crashes: 1,
    window: 30_000,
  });
  const forgetful = new RestartPolicy({ ...OPTIONS, maxRestarts: 1, restartWindow: 0 });
  for (let now = 0; now < 5; now++) assert.deepEqual(forgetful.crashed(now).crashes, 1);
});

Deno.test("RestartPolicy: agrees with a model that counts every crash in a sliding window", () => {
  fc.assert(fc.property(
    fc.integer({ min: 0, max: 8 }),
    fc.integer({ min: 0, max: 5_000 }),
    fc.array(fc.integer({ min: 0, max: 2_000 }), { maxLength: 40 }),
    (maxRestarts, restartWindow, gaps) => {
      const policy = new RestartPolicy({ ...OPTIONS, maxRestarts, restartWindow });
      const times: number[] = [];
      let now = 0;
      for (const gap of gaps) {
        now += gap;
        const crashes = times.filter((t) => now - t < restartWindow).length + 1;
        times.push(now);
        const expected = crashes > maxRestarts
          ? { restart: false, crashes, window: restartWindow }
          : {
            restart: true,
            delay: Math.min(OPTIONS.restartDelay * 2 ** (crashes - 1), OPTIONS.maxRestartDelay),
            crashes,
          };
        assert.deepEqual(policy.crashed(now), expected);
      }
    },
  ));
});

Deno.test("RestartPolicy: more than maxRestarts failed starts in a row give up, however slow", () => {
  const policy = new RestartPolicy(OPTIONS);
  // A start that fails at a 10 s handshake timeout: never more than 3 in the 30 s window.
  for (let i = 1; i <= 5; i++) assert.ok(policy.crashed(i * 10_000, true).restart);
  assert.deepEqual(policy.crashed(60_000, true), { restart: false, crashes: 6, window: 50_000 });
  // A worker that started in between resets the count.
  const recovering = new RestartPolicy(OPTIONS);
  for (let i = 1; i <= 5; i++) assert.ok(recovering.crashed(i * 10_000, true).restart);
  recovering.started();
  assert.ok(recovering.crashed(60_000, true).restart);
});

Deno.test("RestartPolicy: settings out of range are a RangeError naming them", () => {
  assert.throws(
    () => new RestartPolicy({ ...OPTIONS, restartDelay: -1 }),
    /restartDelay .* got -1/,
  );
  assert.throws(
    () => new RestartPolicy({ ...OPTIONS, maxRestarts: 1.5 }),
    /maxRestarts .* got 1.5/,
  );
  assert.throws(
    () => new RestartPolicy({ ...OPTIONS, restartWindow: NaN }),
    /restartWindow .* got NaN/,
  );
});

leakFreeTest("WorkerPool: a queued call with a deadline decades away waits its turn", async () => {
  // Past 2^31 - 1 ms a runtime fires a timer at once: the deadline must not.
  const workers = pool({ size: 1 });
  await workers.started();
  const first = workers.remote.slowPid(200);
  const queued = workers.remote.slowPid(0, { timeout: 2 ** 40 });
  assert.equal(await first, await queued);
  await workers.close();
});

leakFreeTest(
  "WorkerPool: a call that times out a hair early keeps its busy worker busy",
  async () => {
    // A worker's channel fails a call whose deadline is within a millisecond of its own clock;
    // the pool must still count the spinning worker busy until it is replaced (cancelGrace).
    const workers = pool({ size: 1, cancelGrace: 50 });
    await workers.started();
    for (let i = 0; i < 30; i++) {
      const t0 = performance.now();
      // Answered at once; the worker channel's deadline timer stays armed for t0 + 30 ms. (On
      // a loaded machine the answer may come later: that round's spin then starts at once.)
      await workers.remote.echo(1, { timeout: 30 }).catch((error: Error) => {
        if (error.name !== "DeadlineExceededError") throw error;
      });
      const deadline = t0 + 30 + (i % 10) / 10; // within a millisecond after that timer
      const spinning = workers.remote.spin(2_000, {
        timeout: Math.max(1, deadline - performance.now()),
      });
      await assert.rejects(spinning, { name: "DeadlineExceededError" });
      if (workers.stats.inFlight === 0) {
        // Counted free: right only when the spin never began there (its deadline passed before
        // the worker ran it, as on a loaded machine). A spinning worker would answer this after
        // its spin, having counted it.
        const asked = performance.now();
        assert.equal(await workers.remote.spins(), 0, `try ${i}: the spinning worker counted free`);
        assert.ok(performance.now() - asked < 1_500, `try ${i}: the spinning worker counted free`);
      }
      const started = performance.now();
      assert.equal(await workers.remote.echo("next"), "next");
      // On a new worker at once, not after the spin (2 s).
      assert.ok(performance.now() - started < 1_500, `try ${i}: the next call waited the spin`);
    }
    await workers.close();
  },
);

leakFreeTest(
  "WorkerPool: waitForRoom() settles once the pool is closed or has failed",
  async () => {
    const closing = pool({ size: 1, maxQueued: 0 });
    await closing.started();
    const busy = closing.remote.slowPid(100);
    const room = closing.waitForRoom();
    const closed = closing.close();
    await busy;
    await closed;
    await room;
    await assert.rejects(closing.remote.pid(), PoolClosedError);

    const failing = new WorkerPool<EchoApi>(MISSING, {
      size: 1,
      maxQueued: 0,
      maxRestarts: 1,
      restartDelay: 10,
      stderr: "discard",
    });
    await failing.waitForRoom();
    const call = failing.remote.pid();
    const roomAfter = failing.waitForRoom();
    await assert.rejects(call, CrashLoopError);
    await roomAfter;
    await failing.close();
  },
);

leakFreeTest(
  "WorkerPool: close() ends calls queued behind a worker that never answers",
  async () => {
    const workers = pool({ size: 1, drainTimeout: 200 });
    await workers.started();
    const stuck = workers.remote.slowPid(60_000);
    const queued = workers.remote.pid();
    await workers.close();
    await assert.rejects(queued, { name: "PoolClosedError", message: /drainTimeout \(200 ms\)/ });
    await assert.rejects(stuck, WorkerExitedError);
  },
);

leakFreeTest(
  "WorkerPool: a timeout that is no duration is a RangeError, as on a worker",
  async () => {
    const workers = pool({ size: 1 });
    await workers.started();
    for (const timeout of [0, -5, NaN]) {
      await assert.rejects(workers.remote.pid(undefined, { timeout }), {
        name: "RangeError",
        message: `timeout must be a number above 0, got ${timeout}`,
      });
    }
    assert.equal(typeof await workers.remote.pid(undefined, { timeout: 1_000 }), "number");
    await workers.close();
  },
);
