// Interceptors (ChannelOptions.interceptors): the order they run in on both sides, headers
// added by one side and read by the other, results and params replaced, typed errors, streams
// in both directions, and cancellation and deadlines passing through them.

import assert from "node:assert/strict";
import { ConduitError } from "../errors.ts";
import { memory, unix } from "../transports/_test_pairs.ts";
import type { CallContext } from "./call_context.ts";
import { openChannel } from "./channel.ts";
import { DeadlineExceededError, RemoteError } from "./errors.ts";
import type { Interceptor, RemoteStream } from "./types.ts";

class NotAllowedError extends Error {
  override name = "NotAllowedError";
}

const handlers = {
  echo: (text: string, ctx: CallContext) => `${text}|${ctx.headers["x-user"] ?? "-"}`,
  count: async function* (to: number) {
    for (let i = 1; i <= to; i++) yield i;
  },
  sum: async (items: AsyncIterable<number>) => {
    let total = 0;
    for await (const item of items) total += item;
    return total;
  },
  wait: (_: null, ctx: CallContext) =>
    new Promise<string>((resolve) => {
      ctx.signal.addEventListener("abort", () => resolve("aborted"));
    }),
};

function recorder(log: string[], name: string): Interceptor {
  return {
    call: async (call, next) => {
      log.push(`${name} call ${call.method}`);
      const result = await next(call);
      log.push(`${name} call done`);
      return result;
    },
    handle: async (call, next) => {
      log.push(`${name} handle ${call.method}`);
      const result = await next(call);
      log.push(`${name} handle done`);
      return result;
    },
  };
}

async function pair(server: Interceptor[], client: Interceptor[], kind = memory) {
  const { a, b, cleanup } = await kind.pair();
  const [s, c] = await Promise.all([
    openChannel(a, { handlers, interceptors: server, errorClasses: [NotAllowedError] }),
    openChannel<typeof handlers>(b, { interceptors: client, errorClasses: [NotAllowedError] }),
  ]);
  return {
    client: c,
    async close() {
      await Promise.all([c.close(), s.close()]);
      await cleanup();
    },
  };
}

for (const kind of [memory, unix]) {
  Deno.test(`interceptors (${kind.name}): run first-outermost on both sides`, async () => {
    const log: string[] = [];
    const { client, close } = await pair(
      [recorder(log, "S1"), recorder(log, "S2")],
      [recorder(log, "C1"), recorder(log, "C2")],
      kind,
    );
    assert.equal(await client.remote.echo("hi"), "hi|-");
    assert.deepEqual(log, [
      "C1 call echo",
      "C2 call echo",
      "S1 handle echo",
      "S2 handle echo",
      "S2 handle done",
      "S1 handle done",
      "C2 call done",
      "C1 call done",
    ]);
    await close();
  });
}

Deno.test("interceptors: a header added by the caller's interceptor reaches ctx.headers", async () => {
  const seen: string[] = [];
  const { client, close } = await pair(
    [{
      handle: (call, next) => {
        seen.push(`${call.context.headers["x-user"]} ${call.context.headers["x-trace"]}`);
        return next(call);
      },
    }],
    [{
      call: (call, next) => {
        call.headers["x-user"] = "ada";
        return next(call);
      },
    }],
  );
  assert.equal(await client.remote.echo("hi", { headers: { "x-trace": "t1" } }), "hi|ada");
  assert.deepEqual(seen, ["ada t1"]);
  await close();
});

Deno.test("interceptors: replace the param and the result on either side", async () => {
  const { client, close } = await pair(
    [{
      handle: async (call, next) => {
        call.param = `${call.param as string}!`;
        return `[${await next(call) as string}]`;
      },
    }],
    [{
      call: async (call, next) => {
        call.param = (call.param as string).toUpperCase();
        return `<${await next(call) as string}>`;
      },
    }],
  );
  assert.equal(await client.remote.echo("hi"), "<[HI!|-]>");
  await close();
});

Deno.test("interceptors: a typed error fails the call on the caller's side and the handler's", async () => {
  let handled = 0;
  const { client, close } = await pair(
    [{
      handle: (call, next) => {
        if (call.context.headers["x-user"] !== "ada") throw new NotAllowedError("who are you?");
        handled++;
        return next(call);
      },
    }],
    [{
      call: (call, next) => {
        if (call.param === "forbidden") return Promise.reject(new RangeError("not sent"));
        return next(call);
      },
    }],
  );
  await assert.rejects(client.remote.echo("forbidden"), RangeError);
  // The handler side's error crosses as the class the caller registered.
  await assert.rejects(client.remote.echo("hi"), (error: unknown) => {
    assert.ok(error instanceof NotAllowedError, String(error));
    assert.equal((error as Error).message, "who are you?");
    return true;
  });
  assert.equal(await client.remote.echo("hi", { headers: { "x-user": "ada" } }), "hi|ada");
  assert.equal(handled, 1);
  await close();
});

Deno.test("interceptors: a result stream passes through both sides and can be wrapped", async () => {
  const { client, close } = await pair(
    [{
      handle: async (call, next) => {
        const items = await next(call) as AsyncIterable<number>;
        return (async function* () {
          for await (const item of items) yield item * 10;
        })();
      },
    }],
    [{
      call: async (call, next) => {
        const stream = await next(call) as RemoteStream<number>;
        return (async function* () {
          for await (const item of stream) yield item + 1;
        })();
      },
    }],
  );
  const items: number[] = [];
  for await (const item of client.remote.count(3)) items.push(item);
  assert.deepEqual(items, [11, 21, 31]);
  // Awaited, a stream fails as it does without interceptors.
  await assert.rejects(
    client.remote.count(2) as unknown as Promise<unknown>,
    /returned a stream: iterate it/,
  );
  // Iterated, a single value fails likewise.
  await assert.rejects(async () => {
    for await (const _ of client.remote.echo("x") as unknown as AsyncIterable<unknown>) {
      // never reached
    }
  }, ConduitError);
  await close();
});

Deno.test("interceptors: a param stream and a pass-through chain", async () => {
  const passThrough: Interceptor = { call: (call, next) => next(call), handle: (c, n) => n(c) };
  const { client, close } = await pair([passThrough], [passThrough]);
  async function* numbers() {
    yield* [1, 2, 3, 4];
  }
  assert.equal(await client.remote.sum(numbers()), 10);
  const items: number[] = [];
  for await (const item of client.remote.count(2)) items.push(item);
  assert.deepEqual(items, [1, 2]);
  await close();
});

Deno.test("interceptors: cancellation and deadlines pass through them", async () => {
  const passThrough: Interceptor = { call: (call, next) => next(call), handle: (c, n) => n(c) };
  const { client, close } = await pair([passThrough], [passThrough]);
  const controller = new AbortController();
  const call = client.remote.wait(null, { signal: controller.signal });
  setTimeout(() => controller.abort(new Error("stop")), 10);
  await assert.rejects(call, /stop/);
  await assert.rejects(client.remote.wait(null, { timeout: 20 }), DeadlineExceededError);
  // cancel() of an unread call cancels it on the wire too: the handler's signal fires.
  const unread = client.remote.count(1_000_000);
  await unread.cancel();
  assert.equal(await client.remote.echo("after"), "after|-");
  await close();
});

Deno.test("interceptors: a handler-side error that is not registered arrives as RemoteError", async () => {
  const { client, close } = await pair(
    [{ handle: () => Promise.reject(new TypeError("nope")) }],
    [],
  );
  await assert.rejects(client.remote.echo("x"), (error: unknown) => {
    assert.ok(error instanceof RemoteError);
    assert.match((error as RemoteError).message, /nope/);
    return true;
  });
  await close();
});

Deno.test("interceptors: awaiting a stream call through a wrapping interceptor cancels the call", async () => {
  const stopped = Promise.withResolvers<void>();
  const handlers = {
    async *ticks() {
      try {
        for (let i = 0;; i++) {
          await new Promise((resolve) => setTimeout(resolve, 5));
          yield i;
        }
      } finally {
        stopped.resolve();
      }
    },
  };
  // As docs/interceptors.md shows: a generator around the call's stream.
  const wrap: Interceptor = {
    call: async (call, next) => {
      const result = await next(call);
      if (typeof result !== "object" || result === null || !(Symbol.asyncIterator in result)) {
        return result;
      }
      return (async function* () {
        for await (const item of result as AsyncIterable<number>) yield item * 10;
      })();
    },
  };
  const { a, b, cleanup } = await memory.pair();
  const [server, client] = await Promise.all([
    openChannel(a, { handlers, drainTimeout: 2_000 }),
    openChannel<typeof handlers>(b, { interceptors: [wrap], drainTimeout: 2_000 }),
  ]);
  const call = client.remote.ticks(undefined) as unknown as Promise<unknown>;
  await assert.rejects(call, /iterate it instead of awaiting it/);
  await stopped.promise; // the handler's stream was cancelled
  await client.close(); // nothing left in flight: a graceful close
  await server.closed;
  await cleanup();
});

Deno.test("interceptors: the caller's timeout and signal apply while an interceptor holds the call", async () => {
  const handlers = { hi: () => "hi" };
  const release = Promise.withResolvers<void>();
  const slow: Interceptor = {
    call: async (call, next) => {
      await release.promise;
      return next(call);
    },
  };
  const { a, b, cleanup } = await memory.pair();
  const [server, client] = await Promise.all([
    openChannel(a, { handlers }),
    openChannel<typeof handlers>(b, { interceptors: [slow] }),
  ]);
  await assert.rejects(client.remote.hi(undefined, { timeout: 50 }), DeadlineExceededError);
  const controller = new AbortController();
  const aborted = client.remote.hi(undefined, { signal: controller.signal });
  controller.abort(new Error("enough"));
  await assert.rejects(aborted, { message: "enough" });
  // Released, the interceptor's next() starts nothing: those calls are over.
  release.resolve();
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(await client.remote.hi(undefined, { timeout: 1_000 }), "hi");
  await Promise.all([client.close(), server.closed]);
  await cleanup();
});

Deno.test("interceptors: a handler-side retry runs a handler again, never on a param stream read once", async () => {
  let ran = 0;
  const retry: Interceptor = {
    handle: async (call, next) => {
      ran++;
      const first = await next(call);
      // A second run: fine for a plain param, refused for a stream the first run read.
      return [first, await next(call).catch((error: Error) => error.message)];
    },
  };
  const channels = await pair([retry], []);
  try {
    const [echoed, again] = await channels.client.remote.echo("hi") as unknown as [string, string];
    assert.deepEqual([echoed, again], ["hi|-", "hi|-"]);
    const summed = await channels.client.remote.sum(
      (async function* () {
        yield 1;
        yield 2;
      })(),
    ) as unknown as [number, string];
    assert.equal(summed[0], 3);
    assert.match(summed[1], /"sum".*param stream.*first run/);
  } finally {
    await channels.close();
  }
  // One that kept the items it read may run the handler again on its copy.
  const replay: Interceptor = {
    handle: async (call, next) => {
      if (call.method !== "sum") return next(call);
      const items = await Array.fromAsync(call.param as AsyncIterable<number>);
      const copy = () =>
        (async function* () {
          yield* items;
        })();
      const first = await next({ ...call, param: copy() });
      return [first, await next({ ...call, param: copy() })];
    },
  };
  const replaying = await pair([replay], []);
  try {
    const summed = await replaying.client.remote.sum(
      (async function* () {
        yield 1;
        yield 2;
      })(),
    ) as unknown as [number, number];
    assert.deepEqual(summed, [3, 3]);
  } finally {
    await replaying.close();
  }
});

Deno.test("interceptors: next() after the call is over does not run the handler", async () => {
  const late: Array<Promise<unknown>> = [];
  let handled = 0;
  const detached: Interceptor = {
    handle: (call, next) => {
      // Answers at once and keeps next() for later: the call is over when it is called.
      late.push(new Promise((resolve) => setTimeout(resolve, 50)).then(() => next(call)));
      return Promise.resolve("answered");
    },
  };
  const { a, b, cleanup } = await memory.pair();
  const [server, client] = await Promise.all([
    openChannel(a, {
      handlers: { echo: (text: string) => (handled++, text) },
      interceptors: [detached],
    }),
    openChannel<{ echo(text: string): string }>(b, {}),
  ]);
  try {
    assert.equal(await client.remote.echo("x"), "answered");
    await assert.rejects(late[0], (error: Error) => {
      assert.ok(error instanceof ConduitError, String(error));
      assert.match(error.message, /"echo".*over/);
      return true;
    });
    assert.equal(handled, 0);
  } finally {
    await Promise.all([client.close(), server.close()]);
    await cleanup();
  }
});
