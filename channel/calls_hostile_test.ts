// The call engine under hostile peers and unlucky timing: every call settles exactly once,
// with the right outcome or a typed error, and the connection outlives what one call does.

import assert from "node:assert/strict";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { jsonCodec } from "../codecs/json.ts";
import { ConduitError, RemoteError } from "../errors.ts";
import { memoryPair } from "../transports/memory.ts";
import type { CallContext } from "./call_context.ts";
import { type Channel, type ChannelOptions, openChannel } from "./channel.ts";
import { CallCancelledError } from "./errors.ts";

/** Settles with `value`'s outcome, or "hung" after `ms`. */
function outcome(value: PromiseLike<unknown>, ms = 2000): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    Promise.resolve(value).then((v) => ({ ok: v }), (e) => ({ error: e })),
    new Promise((resolve) => timer = setTimeout(() => resolve("hung"), ms)),
  ]).finally(() => clearTimeout(timer));
}

/** A served channel and a caller over a memory pair; disposing closes both. */
async function pairOf<Api extends object>(
  handlers: Api,
  options: Partial<ChannelOptions> = {},
): Promise<{ server: Channel; client: Channel<Api> } & AsyncDisposable> {
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openChannel(a, { codec: jsonCodec(), handlers: handlers as Record<string, never> }),
    openChannel<Api>(b, { codec: jsonCodec(), ...options }),
  ]);
  return {
    server,
    client,
    async [Symbol.asyncDispose]() {
      await Promise.all([client.close().catch(() => {}), server.close().catch(() => {})]);
    },
  };
}

Deno.test("calls hostile: a timeout longer than the wire carries still reaches the handler", async () => {
  const handlers = { echo: (x: number) => x };
  await using pair = await pairOf(handlers);
  for (const timeout of [Number.MAX_VALUE, 2 ** 60, Number.MAX_SAFE_INTEGER + 2]) {
    assert.deepEqual(await outcome(pair.client.remote.echo(5, { timeout })), { ok: 5 });
  }
  assert.deepEqual(await outcome(pair.client.remote.echo(6)), { ok: 6 });
});

/** A value thrown that has no string form: `String(value)` throws. */
function unprintable(): unknown {
  return Object.create(null);
}

Deno.test("calls hostile: a handler that throws a value with no string form fails only its call", async () => {
  const handlers = {
    echo: (x: number) => x,
    throws: (): number => {
      throw unprintable();
    },
    rejects: (): Promise<number> => Promise.reject(unprintable()),
    async *items(): AsyncIterable<number> {
      yield 1;
      throw unprintable();
    },
  };
  await using pair = await pairOf(handlers);
  const remote = pair.client.remote;
  for (const call of [() => remote.throws(), () => remote.rejects()]) {
    const settled = await outcome(call()) as { error?: unknown };
    assert.ok(settled.error instanceof RemoteError, String(settled));
    assert.equal(settled.error.code, "internal");
  }
  const seen: unknown[] = [];
  const streamed = await outcome((async () => {
    for await (const item of remote.items()) seen.push(item);
  })()) as { error?: unknown };
  assert.deepEqual(seen, [1]);
  assert.ok(streamed.error instanceof RemoteError, String(streamed));
  assert.deepEqual(await outcome(remote.echo(7)), { ok: 7 });
});

Deno.test("calls hostile: a param stream that fails with a value with no string form fails only its stream", async () => {
  let handlerSaw: unknown;
  const handlers = {
    echo: (x: number) => x,
    async sum(items: AsyncIterable<number>): Promise<number> {
      let sum = 0;
      try {
        for await (const item of items) sum += item;
      } catch (error) {
        handlerSaw = error;
        throw error;
      }
      return sum;
    },
  };
  await using pair = await pairOf(handlers);
  const source = async function* () {
    yield 1;
    throw unprintable();
  };
  const settled = await outcome(
    pair.client.remote.sum(source() as unknown as AsyncIterable<number>),
  ) as { error?: unknown };
  assert.ok(settled.error instanceof RemoteError, String(settled));
  assert.ok(handlerSaw instanceof Error, String(handlerSaw));
  assert.deepEqual(await outcome(pair.client.remote.echo(8)), { ok: 8 });
});

Deno.test("calls hostile: a call aborted or cancelled with a reason that has no string form is cancelled", async () => {
  const stopped: unknown[] = [];
  const handlers = {
    hang: (_: number, ctx: CallContext): Promise<number> =>
      new Promise((_, reject) =>
        ctx.signal.addEventListener("abort", () => {
          stopped.push(ctx.signal.reason);
          reject(ctx.signal.reason);
        })
      ),
  };
  await using pair = await pairOf(handlers);
  const reason = unprintable();
  const controller = new AbortController();
  const aborted = pair.client.remote.hang(1, { signal: controller.signal });
  await new Promise((resolve) => setTimeout(resolve, 10));
  controller.abort(reason);
  assert.deepEqual(await outcome(aborted), { error: reason });
  const cancelled = pair.client.remote.hang(2);
  await new Promise((resolve) => setTimeout(resolve, 10));
  await (cancelled as unknown as { cancel(reason: unknown): Promise<void> }).cancel(reason);
  assert.deepEqual(await outcome(cancelled), { error: reason });
  // Both handlers saw the cancel: their calls are over on both sides.
  while (stopped.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.ok(stopped.every((error) => error instanceof CallCancelledError), String(stopped));
});

Deno.test("calls hostile: a param stream still read after its handler returned fails, not ends", async () => {
  const read = Promise.withResolvers<unknown>();
  const handlers = {
    accept(items: AsyncIterable<number>): string {
      // Read on after the call is answered: the caller stops sending once it has the result.
      (async () => {
        let sum = 0;
        for await (const item of items) sum += item;
        return sum;
      })().then(read.resolve, (error) => read.resolve(error));
      return "accepted";
    },
  };
  await using pair = await pairOf(handlers);
  const source = async function* () {
    yield 1;
    await new Promise((resolve) => setTimeout(resolve, 20));
    yield 2;
  };
  assert.deepEqual(await outcome(pair.client.remote.accept(source())), { ok: "accepted" });
  const seen = await read.promise;
  // Not a sum of the items that happened to arrive, taken for the whole stream.
  assert.ok(seen instanceof ConduitError, String(seen));
  assert.match(seen.message, /accept.*over before its param stream ended/);
});

/** V8's collector, to see what a channel still holds once calls are over. */
function collector(): () => void {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
}

Deno.test("calls hostile: intercepted calls over a long-lived signal let go of their results", async () => {
  const gc = collector();
  const handlers = { echo: (x: unknown) => x };
  await using pair = await pairOf(handlers, {
    interceptors: [{ call: (info, next) => next(info) }],
  });
  // One signal for every call, as a service's shutdown signal is.
  const shutdown = new AbortController();
  const results: WeakRef<object>[] = [];
  for (let i = 0; i < 20; i++) {
    const result = await pair.client.remote.echo({ i }, { signal: shutdown.signal });
    results.push(new WeakRef(result as object));
  }
  for (let i = 0; i < 5; i++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc();
  }
  // The last may still be in a register or a reused buffer; the others are gone.
  const alive = results.filter((ref) => ref.deref() !== undefined).length;
  assert.ok(alive <= 1, `${alive} of ${results.length} results still held`);
});

Deno.test("calls hostile: a result whose properties cannot be read fails only its call", async () => {
  const refuse = () => {
    throw new TypeError("this object has no such property");
  };
  const handlers = {
    echo: (x: number) => x,
    // A thenable check reads `then`, a stream check asks `Symbol.asyncIterator in`: a strict
    // proxy (as some ORMs and reactive stores return) refuses both.
    thenThrows: (): unknown => ({
      get then() {
        return refuse();
      },
    }),
    hasThrows: (): unknown => new Proxy({}, { has: refuse }),
    laterHasThrows: (): Promise<unknown> =>
      Promise.resolve().then(() => [new Proxy({}, { has: refuse })][0]),
  };
  await using pair = await pairOf(handlers);
  const remote = pair.client.remote as unknown as Record<string, () => Promise<unknown>>;
  for (const method of ["thenThrows", "hasThrows", "laterHasThrows"]) {
    const settled = await outcome(remote[method]()) as { error?: unknown };
    assert.ok(settled.error instanceof RemoteError, `${method}: ${String(settled)}`);
    assert.match(settled.error.message, /no such property/);
  }
  assert.deepEqual(await outcome(pair.client.remote.echo(9)), { ok: 9 });
});
