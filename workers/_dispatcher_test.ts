// The pool semantics the dispatcher holds, tried with real worker processes: a retry never
// re-sends a consumed stream param, and a cancelled call frees its worker only when the
// worker is free.

import assert from "node:assert/strict";
import fc from "fast-check";
import { leakFreeTest, testEnv, waitUntilGone } from "./_test_processes.ts";
import type { EchoApi } from "./_testdata/echo_worker.ts";
import { CallNotReplayableError, WorkerExitedError } from "./errors.ts";
import { type PoolRemoteOf, WorkerPool, type WorkerPoolOptions } from "./worker_pool.ts";
import { CallQueue } from "./_dispatcher.ts";

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

interface Item {
  id: number;
  done: boolean;
}

Deno.test("CallQueue: first in, first out; a retried item goes to the front", () => {
  const queue = new CallQueue<Item>();
  const items = [1, 2, 3].map((id) => ({ id, done: false }));
  for (const item of items) queue.push(item);
  assert.equal(queue.waiting, 3);
  assert.equal(queue.peek(), items[0]);
  queue.take();
  queue.pushFront(items[0]);
  const order: number[] = [];
  for (let item = queue.peek(); item !== undefined; item = queue.peek()) {
    queue.take();
    order.push(item.id);
  }
  assert.deepEqual(order, [1, 2, 3]);
  assert.equal(queue.waiting, 0);
});

Deno.test("CallQueue: an item settled while waiting is skipped and no longer counts", () => {
  const queue = new CallQueue<Item>();
  const [a, b, c] = [1, 2, 3].map((id) => ({ id, done: false }));
  queue.push(a);
  queue.push(b);
  queue.push(c);
  b.done = true;
  queue.cancelled();
  assert.equal(queue.waiting, 2);
  queue.take(); // a
  assert.equal(queue.peek(), c);
  a.done = true;
  assert.deepEqual(queue.clear(), [c]);
  assert.equal(queue.waiting, 0);
  assert.equal(queue.peek(), undefined);
});

Deno.test("CallQueue: agrees with an array model, compaction included", () => {
  type Op = { op: "push" } | { op: "front" } | { op: "take" } | { op: "settle"; at: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.constant({ op: "push" as const }),
    fc.constant({ op: "front" as const }),
    fc.constant({ op: "take" as const }),
    fc.nat(50).map((at) => ({ op: "settle" as const, at })),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 3000 }), (ops) => {
      const queue = new CallQueue<Item>();
      let model: Item[] = [];
      let next = 0;
      for (const step of ops) {
        if (step.op === "push" || step.op === "front") {
          const item = { id: next++, done: false };
          if (step.op === "push") {
            queue.push(item);
            model.push(item);
          } else {
            queue.pushFront(item);
            model.unshift(item);
          }
        } else if (step.op === "take") {
          const item = queue.peek();
          assert.equal(item, model[0]);
          if (item !== undefined) {
            queue.take();
            model.shift();
          }
          queue.compact();
        } else if (model.length > 0) {
          const item = model[step.at % model.length];
          item.done = true;
          queue.cancelled();
          model = model.filter((m) => m !== item);
        }
        assert.equal(queue.waiting, model.length);
      }
      assert.deepEqual(queue.clear(), model);
    }),
    { numRuns: 50 },
  );
});

Deno.test("CallQueue: a long queue taken from keeps its order across compaction", () => {
  const queue = new CallQueue<Item>();
  for (let id = 0; id < 3000; id++) queue.push({ id, done: false });
  for (let id = 0; id < 2000; id++) {
    assert.equal(queue.peek()?.id, id);
    queue.take();
    queue.compact();
  }
  queue.pushFront({ id: -1, done: false });
  assert.equal(queue.waiting, 1001);
  assert.deepEqual(queue.clear().map((item) => item.id), [
    -1,
    ...Array.from({ length: 1000 }, (_, i) => 2000 + i),
  ]);
});
