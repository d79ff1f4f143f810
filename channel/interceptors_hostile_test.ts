// Caller-side interceptors under hostile use: a timeout longer than a timer can wait (2^31 − 1
// ms) while an interceptor holds the call, and interceptors that start calls and abandon them
// (a hedge's loser, a call started after the answer): those calls are cancelled once the
// intercepted call is over, so they hold no slot and no work on the peer.

import assert from "node:assert/strict";
import { MAX_TIMER_DELAY, within } from "../_runtime.ts";
import { DAY, fakeLongClock } from "../_test_clock.ts";
import { memory, unix } from "../transports/_test_pairs.ts";
import type { CallContext } from "./call_context.ts";
import { openChannel } from "./channel.ts";
import { DeadlineExceededError } from "./errors.ts";
import type { Interceptor, RemoteStream } from "./types.ts";

const tick = (ms = 20) => new Promise((resolve) => setTimeout(resolve, ms));

for (const held of [true, false]) {
  const how = held ? "held by an interceptor" : "passed through an interceptor";
  Deno.test(`interceptors hostile: a 30-day timeout ${how} does not fire at 24.8 days`, async () => {
    const release = Promise.withResolvers<void>();
    const started: string[] = [];
    const handlers = {
      wait: (_: null, ctx: CallContext) =>
        new Promise<string>((resolve) => {
          started.push("wait");
          ctx.signal.addEventListener("abort", () => resolve("aborted"));
        }),
    };
    const holding: Interceptor = {
      call: async (call, next) => {
        if (held) await release.promise;
        return next(call);
      },
    };
    const { a, b, cleanup } = await memory.pair();
    const [server, client] = await Promise.all([
      openChannel(a, { handlers }),
      openChannel<typeof handlers>(b, { interceptors: [holding] }),
    ]);
    const clock = fakeLongClock();
    try {
      let settled: unknown = "pending";
      const outcome = () => settled;
      const call = client.remote.wait(null, { timeout: 30 * DAY });
      call.then((value) => settled = value, (error) => settled = error);
      await tick();
      assert.equal(started.length, held ? 0 : 1);
      clock.advance(MAX_TIMER_DELAY + 1_000);
      await tick();
      assert.equal(outcome(), "pending", "the call ended at the timer's cap");
      clock.advance(30 * DAY - MAX_TIMER_DELAY);
      await tick();
      assert.ok(outcome() instanceof DeadlineExceededError, String(outcome()));
      release.resolve();
      await tick();
      // Held, the deadline passed before next(): the call never reached the handler.
      assert.equal(started.length, held ? 0 : 1);
    } finally {
      clock.restore();
      release.resolve();
      await Promise.all([client.close(), server.close()]);
      await cleanup();
    }
  });
}

/** A server whose `slow` runs until cancelled (or an hour), and counts what it saw. */
async function hedged(interceptor: Interceptor, kind = memory, maxInFlight = 1024) {
  const seen = { slowStarted: 0, slowCancelled: 0, cancelled: Promise.withResolvers<void>() };
  const handlers = {
    fast: (text: string) => text,
    slow: (_: string, ctx: CallContext) =>
      new Promise<string>((resolve) => {
        seen.slowStarted++;
        const timer = setTimeout(() => resolve("late"), 3_600_000);
        ctx.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          seen.slowCancelled++;
          seen.cancelled.resolve();
          resolve("cancelled");
        });
      }),
    count: async function* (to: number) {
      for (let i = 1; i <= to; i++) yield i;
    },
    ticks: async function* (_: null, ctx: CallContext) {
      seen.slowStarted++;
      try {
        for (let i = 0;; i++) {
          await new Promise((resolve) => setTimeout(resolve, 5));
          yield i;
        }
      } finally {
        if (ctx.signal.aborted) {
          seen.slowCancelled++;
          seen.cancelled.resolve();
        }
      }
    },
  };
  const { a, b, cleanup } = await kind.pair();
  const [server, client] = await Promise.all([
    openChannel(a, { handlers, drainTimeout: 200 }),
    openChannel<typeof handlers>(b, {
      interceptors: [interceptor],
      maxInFlight,
      drainTimeout: 200,
    }),
  ]);
  return {
    client,
    seen,
    /** Whether the peer saw the loser cancelled within a second. */
    loserCancelled: () => within(seen.cancelled.promise.then(() => true), 1_000, false),
    async close() {
      await Promise.all([client.close(), server.close()]);
      await cleanup();
    },
  };
}

/** Sends the call to `slow` and to `fast` too, and answers with the first to answer. */
const hedge: Interceptor = {
  call: (call, next) => {
    if (call.method !== "slow") return next(call);
    return Promise.race([next(call), next({ ...call, method: "fast" })]);
  },
};

for (const kind of [memory, unix]) {
  Deno.test(`interceptors hostile (${kind.name}): a hedge's loser is cancelled once the call answered`, async () => {
    const channels = await hedged(hedge, kind);
    try {
      assert.equal(await channels.client.remote.slow("x"), "x");
      assert.ok(await channels.loserCancelled(), "the loser still runs on the peer");
      assert.equal(channels.seen.slowCancelled, 1);
    } finally {
      await channels.close();
    }
  });
}

Deno.test("interceptors hostile: a hedge's loser does not keep its slot of maxInFlight", async () => {
  // One call in flight at a time: the loser, queued behind the winner, must not take the slot.
  const channels = await hedged(
    {
      call: (call, next) => {
        if (call.method !== "slow") return next(call);
        return Promise.race([next({ ...call, method: "fast" }), next(call)]);
      },
    },
    memory,
    1,
  );
  try {
    assert.equal(await channels.client.remote.slow("x"), "x");
    const after = await within(channels.client.remote.fast("after"), 1_000, "timed out");
    assert.equal(after, "after");
  } finally {
    await channels.close();
  }
});

Deno.test("interceptors hostile: a call an interceptor starts after the call answered starts cancelled", async () => {
  const late = Promise.withResolvers<unknown>();
  const channels = await hedged({
    call: (call, next) => {
      if (call.method !== "fast") return next(call);
      // Answers at once and starts `slow` later, detached from the call.
      setTimeout(() => late.resolve(next({ ...call, method: "slow" }).catch((e) => e)), 20);
      return Promise.resolve("answered");
    },
  });
  try {
    assert.equal(await channels.client.remote.fast("x"), "answered");
    const error = await within(late.promise, 1_000, "still running");
    assert.ok(error instanceof Error, String(error));
    assert.equal(channels.seen.slowStarted, 0, "the late call reached the peer");
  } finally {
    await channels.close();
  }
});

Deno.test("interceptors hostile: a stream hedge keeps the winner's stream and cancels the loser", async () => {
  const channels = await hedged({
    call: async (call, next) => {
      if (call.method !== "count") return next(call);
      const loser = next({ ...call, method: "slow", param: "x" });
      const winner = await next(call);
      void loser;
      return winner;
    },
  });
  try {
    const items: number[] = [];
    for await (const item of channels.client.remote.count(3)) items.push(item);
    assert.deepEqual(items, [1, 2, 3]);
    assert.ok(await channels.loserCancelled(), "the loser still runs on the peer");
  } finally {
    await channels.close();
  }
});

Deno.test("interceptors hostile: a wrapped stream keeps its call until read; the others end with it", async () => {
  let loser: Promise<unknown> | undefined;
  const channels = await hedged({
    call: async (call, next) => {
      if (call.method !== "count") return next(call);
      // Another call beside the stream, never awaited: it ends when the stream was read.
      loser = next({ ...call, method: "slow", param: "x" });
      const stream = await next(call) as RemoteStream<number>;
      return (async function* () {
        for await (const item of stream) yield item * 10;
      })();
    },
  });
  try {
    const iterator = channels.client.remote.count(3)[Symbol.asyncIterator]();
    // Settled with the wrapper: nothing is cancelled yet, the wrapped call still streams.
    assert.deepEqual(await iterator.next(), { done: false, value: 10 });
    await tick();
    assert.equal(channels.seen.slowCancelled, 0);
    assert.deepEqual(await iterator.next(), { done: false, value: 20 });
    assert.deepEqual(await iterator.next(), { done: false, value: 30 });
    assert.deepEqual(await iterator.next(), { done: true, value: undefined });
    assert.ok(await channels.loserCancelled(), "the other call still runs on the peer");
    await loser!.catch(() => {});
  } finally {
    await channels.close();
  }
});

Deno.test("interceptors hostile: breaking out of a wrapped stream cancels the stream's call", async () => {
  const channels = await hedged({
    call: async (call, next) => {
      if (call.method !== "ticks") return next(call);
      const stream = await next(call) as RemoteStream<number>;
      return (async function* () {
        for await (const item of stream) yield item;
      })();
    },
  });
  try {
    for await (const item of channels.client.remote.ticks(null)) {
      if (item === 2) break;
    }
    assert.ok(await channels.loserCancelled(), "the stream still runs on the peer");
    assert.equal(await channels.client.remote.fast("after"), "after");
  } finally {
    await channels.close();
  }
});

Deno.test("interceptors hostile: a retry after a failure still works, and a deadline still applies", async () => {
  let attempts = 0;
  const channels = await hedged({
    call: async (call, next) => {
      attempts++;
      try {
        return await next({ ...call, method: attempts === 1 ? "nope" : call.method });
      } catch {
        return next(call);
      }
    },
  });
  try {
    assert.equal(await channels.client.remote.fast("x"), "x");
    await assert.rejects(channels.client.remote.slow("x", { timeout: 50 }), DeadlineExceededError);
    assert.ok(await channels.loserCancelled());
  } finally {
    await channels.close();
  }
});
