// The pool semantics the dispatcher holds, tried with real worker processes: a retry never
// re-sends a consumed stream param, and a cancelled call frees its worker only when the
// worker is free.
import assert from "node:assert/strict";
import { leakFreeTest, testEnv, waitUntilGone } from "./_test_processes.ts";
import type { EchoApi } from "./_testdata/echo_worker.ts";
import { CallNotReplayableError, WorkerExitedError } from "./errors.ts";
import { type PoolRemoteOf, WorkerPool, type WorkerPoolOptions } from "./worker_pool.ts";

const ECHO = new URL("./_testdata/echo_worker.ts", import.meta.url);

function pool(options: WorkerPoolOptions<EchoApi>): WorkerPool<EchoApi> {
  return new WorkerPool<EchoApi>(ECHO, {
    stderr: "discard",
    ...options,
    env: { ...testEnv() },
  });
}

/** Polls `check` until it holds (a pool's counters change as frames arrive). */
async function until(check: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`Gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const CHUNKS = 64;
const CHUNK_BYTES = 16 * 1024;
const KILL_AT = 8;

/** The upload's chunks: each filled with its index, so a truncated upload hashes differently. */
function chunk(i: number): Uint8Array {
  return new Uint8Array(CHUNK_BYTES).fill(i + 1);
}

/** Yields the upload, SIGKILLing `victim` (the worker receiving it) after KILL_AT chunks. */
async function* upload(victim: number | undefined): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < CHUNKS; i++) {
    if (i === KILL_AT && victim !== undefined) Deno.kill(victim, "SIGKILL");
    yield chunk(i);
  }
}

async function expectedSha256(): Promise<string> {
  const all = new Uint8Array(CHUNKS * CHUNK_BYTES);
  for (let i = 0; i < CHUNKS; i++) all.set(chunk(i), i * CHUNK_BYTES);
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", all));
  return Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("");
}

leakFreeTest(
  "pool retry: a one-shot stream param is not re-sent after its worker is killed",
  async () => {
    const workers = pool({ size: 1, retryable: ["digest"], restartDelay: 10 });
    const victim = await workers.remote.pid();
    const error = await workers.remote.digest(upload(victim)).then(
      (answer) => assert.fail(`a wrong success: ${JSON.stringify(answer)}`),
      (e) => e,
    );
    assert.ok(error instanceof CallNotReplayableError, String(error));
    assert.equal(error.method, "digest");
    assert.ok(error.cause instanceof WorkerExitedError, String(error.cause));
    assert.equal(error.cause.signal, "SIGKILL");
    const stats = workers.stats;
    assert.equal(stats.retried, 0);
    assert.equal(stats.failed, 1);
    // The pool goes on: a new worker took the killed one's place.
    const next = await workers.remote.pid();
    assert.notEqual(next, victim);
    await workers.close();
    await waitUntilGone([victim, next]);
  },
);

leakFreeTest(
  "pool retry: a replayable stream source is sent whole again after its worker is killed",
  async () => {
    const workers = pool({ size: 1, retryable: ["digest"], restartDelay: 10 });
    const victim = await workers.remote.pid();
    let attempts = 0;
    // A function: each attempt gets a fresh upload; only the first kills its receiver.
    const answer = await workers.remote.digest(() => upload(attempts++ === 0 ? victim : undefined));
    assert.equal(attempts, 2);
    assert.notEqual(answer.pid, victim);
    assert.equal(answer.bytes, CHUNKS * CHUNK_BYTES);
    assert.equal(answer.sha256, await expectedSha256());
    // The retry's handler sees that it is one: the call's key, and attempt 2.
    assert.equal(answer.attempt, 2);
    assert.equal(typeof answer.key, "string");
    assert.equal(workers.stats.retried, 1);
    assert.equal(workers.stats.completed, 2);
    // An array and a Uint8Array are replayable sources too.
    const bytes = await workers.remote.digest(() => [chunk(0), chunk(1)], { key: "mine" });
    assert.equal(bytes.bytes, 2 * CHUNK_BYTES);
    assert.deepEqual([bytes.key, bytes.attempt], ["mine", 1]); // the caller's own key is kept
    assert.notEqual(bytes.key, answer.key);
    assert.equal((await workers.remote.digest(() => chunk(2))).bytes, CHUNK_BYTES);
    await workers.close();
    await waitUntilGone([victim, answer.pid]);
  },
);

/** Both workers' pids: two slow calls at once, one per worker (`concurrency: 1`). */
async function bothPids(workers: WorkerPool<EchoApi>): Promise<number[]> {
  await workers.started();
  const pids = await Promise.all([workers.remote.slowPid(100), workers.remote.slowPid(100)]);
  assert.equal(new Set(pids).size, 2);
  return pids;
}

/** Cancels a spin on one worker; returns the pid of the worker that answered calls meanwhile. */
async function cancelSpin(workers: WorkerPool<EchoApi>, ms: number): Promise<number> {
  const controller = new AbortController();
  const stuck = workers.remote.spin(ms, { signal: controller.signal });
  await until(() => workers.stats.inFlight === 1, "the spin to reach a worker");
  controller.abort(new Error("never mind"));
  await assert.rejects(stuck, /never mind/);
  // The worker cannot have seen the cancel (its handler is synchronous): its place stays taken.
  assert.equal(workers.stats.inFlight, 1);
  const answered = new Set<number>();
  for (let i = 0; i < 3; i++) answered.add(await workers.remote.pid());
  // Every call went to the idle worker.
  assert.equal(answered.size, 1);
  return [...answered][0];
}

leakFreeTest(
  "pool cancel: a cancelled call's worker gets no new call until it is free (wait)",
  async () => {
    const workers = pool({ size: 2, ignoredCancel: "wait" });
    const pids = await bothPids(workers);
    const idle = await cancelSpin(workers, 3_000);
    const stuck = pids.find((pid) => pid !== idle)!;
    // Once the spin ends the worker answers the cancel, and its place is free again.
    await workers.drain();
    const stats = workers.stats;
    assert.equal(stats.inFlight, 0);
    assert.equal(stats.replaced, 0);
    assert.equal(stats.crashes, 0);
    const answered = await Promise.all([workers.remote.slowPid(50), workers.remote.slowPid(50)]);
    assert.deepEqual(new Set(answered), new Set(pids));
    await workers.close();
    await waitUntilGone([stuck, idle]);
  },
);

leakFreeTest(
  "pool cancel: a worker that ignores a cancel is replaced after the grace period",
  async () => {
    // The default: "replace" after DEFAULT_CANCEL_GRACE.
    const workers = pool({ size: 2 });
    const pids = await bothPids(workers);
    const idle = await cancelSpin(workers, 60_000);
    const stuck = pids.find((pid) => pid !== idle)!;
    await waitUntilGone([stuck]);
    await workers.drain();
    await workers.started();
    const stats = workers.stats;
    assert.equal(stats.replaced, 1);
    assert.equal(stats.crashes, 0);
    assert.equal(stats.inFlight, 0);
    assert.equal(stats.workers, 2);
    const answered = await Promise.all([workers.remote.slowPid(50), workers.remote.slowPid(50)]);
    assert.ok(!answered.includes(stuck));
    assert.ok(answered.includes(idle));
    await workers.close();
    await waitUntilGone(answered);
  },
);

Deno.test("pool remote types: a stream param also takes a source function", () => {
  type Api = {
    // deno-lint-ignore no-explicit-any
    loose(x: any): number;
    upload(chunks: AsyncIterable<Uint8Array>): number;
    square(n: number): number;
  };
  // Type-checked, never run.
  const _calls = (remote: PoolRemoteOf<Api>) => [
    remote.loose({ a: 1 }),
    remote.upload(() => [new Uint8Array(1)]),
    remote.upload(() => new Uint8Array(1)),
    // @ts-expect-error a number is no stream source
    remote.upload(5),
    // @ts-expect-error a string is not a number
    remote.square("x"),
  ];
  assert.equal(typeof _calls, "function");
});
