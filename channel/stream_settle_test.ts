// How a stream settles when its call ends early: a handler reading its param stream learns why,
// reads that overlap all settle in order, and a stream returned too late is stopped unread.

import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { memoryPair } from "../transports/memory.ts";
import type { CallContext } from "./call_context.ts";
import { openChannel } from "./channel.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("stream: a handler's param stream fails, not ends, when the call is cancelled", async () => {
  for (const end of ["deadline", "signal"] as const) {
    let outcome = "";
    const seen = Promise.withResolvers<void>();
    const handlers = {
      async sum(items: AsyncIterable<number>, _ctx: CallContext): Promise<number> {
        let sum = 0;
        try {
          for await (const item of items) sum += item;
          outcome = "a clean end";
        } catch (error) {
          outcome = (error as Error).name;
        }
        seen.resolve();
        return sum;
      },
    };
    const [a, b] = memoryPair();
    const [server, client] = await Promise.all([
      openChannel(a, { codec: jsonCodec(), handlers }),
      openChannel<typeof handlers>(b, { codec: jsonCodec() }),
    ]);
    const stall = Promise.withResolvers<void>();
    const source = async function* () {
      yield 1;
      yield 2;
      await stall.promise; // the upload stalls
    };
    const controller = new AbortController();
    const call = client.remote.sum(
      source(),
      end === "deadline" ? { timeout: 100 } : { signal: controller.signal },
    );
    if (end === "signal") setTimeout(() => controller.abort(), 50);
    await assert.rejects(call);
    await seen.promise;
    stall.resolve();
    await Promise.all([client.close(), server.close()]);
    // Read to its end, a cut-off upload would look whole.
    assert.equal(outcome, end === "deadline" ? "DeadlineExceededError" : "CallCancelledError");
  }
});

Deno.test("stream: next() calls that overlap all settle, in order", async () => {
  const handlers = {
    async *count(n: number) {
      for (let i = 0; i < n; i++) {
        await sleep(5);
        yield i;
      }
    },
  };
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openChannel(a, { codec: jsonCodec(), handlers }),
    openChannel<typeof handlers>(b, { codec: jsonCodec() }),
  ]);
  const iterator = client.remote.count(3)[Symbol.asyncIterator]();
  const results = await Promise.all([1, 2, 3, 4].map(() => iterator.next()));
  assert.deepEqual(results.map((result) => result.value), [0, 1, 2, undefined]);
  await Promise.all([client.close(), server.close()]);
});

Deno.test("stream: a stream the handler returns after its call was cancelled is stopped", async () => {
  const cancelled = Promise.withResolvers<void>();
  const returned = Promise.withResolvers<void>();
  const handlers = {
    async late(_param: null, _ctx: CallContext): Promise<ReadableStream<number>> {
      await returned.promise;
      return new ReadableStream<number>({
        pull: (controller) => controller.enqueue(1),
        cancel: () => cancelled.resolve(),
      });
    },
  };
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openChannel(a, { codec: jsonCodec(), handlers }),
    openChannel<typeof handlers>(b, { codec: jsonCodec() }),
  ]);
  const controller = new AbortController();
  const reading = Array.fromAsync(client.remote.late(null, { signal: controller.signal }));
  await sleep(20);
  controller.abort();
  await assert.rejects(reading);
  await sleep(20); // the CANCEL reaches the handler's side first
  returned.resolve();
  await cancelled.promise; // a file or a subscription behind it is let go
  await Promise.all([client.close(), server.closed]);
});

Deno.test("stream: a stream param whose call ends before it is sent is stopped", async () => {
  const release = Promise.withResolvers<void>();
  const handlers = {
    hold: () => release.promise.then(() => "held"),
    sum: async (items: AsyncIterable<number>) => {
      let sum = 0;
      for await (const item of items) sum += item;
      return sum;
    },
  };
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openChannel(a, { codec: jsonCodec(), handlers }),
    openChannel<typeof handlers>(b, { codec: jsonCodec(), maxInFlight: 1 }),
  ]);
  const held = client.remote.hold(undefined);
  // Queued behind it until its deadline: never sent, its source is let go.
  const cancelled = Promise.withResolvers<void>();
  const source = new ReadableStream<number>({
    pull: (controller) => controller.enqueue(1),
    cancel: () => cancelled.resolve(),
  });
  await assert.rejects(client.remote.sum(source, { timeout: 50 }), {
    name: "DeadlineExceededError",
  });
  await cancelled.promise;
  release.resolve();
  assert.equal(await held, "held");
  await Promise.all([client.close(), server.closed]);
});
