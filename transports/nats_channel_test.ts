// The channel's essentials over a NATS transport pair and a real nats-server, through the
// public channel API: typed calls both ways, streams with credit, cancellation, deadlines, and
// a peer whose NATS connection goes away.

import assert from "node:assert/strict";
import {
  CallCancelledError,
  type CallContext,
  type Channel,
  type ChannelOptions,
  ConnectionClosedError,
  DeadlineExceededError,
  openChannel,
  RemoteError,
} from "../channel/mod.ts";
import { jsonCodec } from "../codecs/json.ts";
import { haveNatsServer, type NatsServer, startNatsServer } from "./_test_nats_server.ts";
import { connectNats, listenNats } from "./nats.ts";
import type { NatsConnection } from "@nats-io/transport-node";

interface ServerApi {
  add(param: { a: number; b: number }): number;
  callBack(n: number, ctx: CallContext<ClientApi>): Promise<number>;
  count(to: number, ctx: CallContext): AsyncIterable<number>;
  sum(items: AsyncIterable<number>): Promise<number>;
  wait(ms: number, ctx: CallContext): Promise<string>;
  fail(message: string): never;
}

interface ClientApi {
  scale(n: number): number;
}

interface Pair extends AsyncDisposable {
  server: Channel<ClientApi>;
  client: Channel<ServerApi>;
  serverNc: NatsConnection;
}

async function channelPair(
  nats: NatsServer,
  serverHandlers: Partial<ServerApi>,
  options: Partial<ChannelOptions> = {},
): Promise<Pair> {
  const [serverNc, clientNc] = await Promise.all([nats.connect(), nats.connect()]);
  const listener = await listenNats(serverNc, "svc", { queue: "svc", heartbeat: 100 });
  const accepted = listener.accept();
  const clientTransport = await connectNats(clientNc, "svc", { heartbeat: 100 });
  const serverTransport = await accepted;
  await listener.close();
  const [server, client] = await Promise.all([
    openChannel<ClientApi>(serverTransport, {
      codec: jsonCodec(),
      handlers: serverHandlers,
      ...options,
    }),
    openChannel<ServerApi>(clientTransport, {
      codec: jsonCodec(),
      handlers: { scale: (n: number) => n * 10 },
      ...options,
    }),
  ]);
  return {
    server,
    client,
    serverNc,
    async [Symbol.asyncDispose]() {
      await Promise.all([client.close(), server.close()]);
    },
  };
}

function natsTest(name: string, fn: (nats: NatsServer) => Promise<void>): void {
  Deno.test({
    name: `nats channel: ${name}`,
    ignore: !haveNatsServer,
    async fn() {
      const nats = await startNatsServer();
      try {
        await fn(nats);
      } finally {
        await nats.stop();
      }
    },
  });
}

natsTest("typed calls both ways, errors as values, 256 in flight", async (nats) => {
  await using pair = await channelPair(nats, {
    add: ({ a, b }) => a + b,
    callBack: async (n, ctx) => (await ctx.channel.remote.scale(n)) + 1,
    fail: (message) => {
      throw new RangeError(message);
    },
  });
  assert.equal(await pair.client.remote.add({ a: 2, b: 3 }), 5);
  assert.equal(await pair.client.remote.callBack(4), 41);
  assert.equal(await pair.server.remote.scale(7), 70);
  const error = await pair.client.remote.fail("too big").catch((e) => e);
  assert.ok(error instanceof RemoteError, `got ${error}`);
  assert.equal(error.name, "RangeError");
  assert.equal(error.message, "too big");
  const sums = await Promise.all(
    Array.from({ length: 256 }, (_, i) => pair.client.remote.add({ a: i, b: 1 })),
  );
  assert.deepEqual(sums, Array.from({ length: 256 }, (_, i) => i + 1));
});

natsTest(
  "streams both ways, and a slow consumer holds the producer to its credit",
  async (nats) => {
    let produced = 0;
    await using pair = await channelPair(nats, {
      async *count(to) {
        for (let i = 1; i <= to; i++) {
          produced = i;
          yield i;
        }
      },
      async sum(items) {
        let total = 0;
        for await (const n of items) total += n;
        return total;
      },
    }, { streamWindowBytes: 1024 });
    assert.deepEqual(
      await Array.fromAsync(pair.client.remote.count(2000)),
      [
        ...Array(2000).keys(),
      ].map((i) => i + 1),
    );
    async function* numbers() {
      for (let i = 1; i <= 1000; i++) yield i;
    }
    assert.equal(await pair.client.remote.sum(numbers()), 500500);
    // Read slowly: the producer stays within the stream window of the consumer.
    let consumed = 0;
    let maxAhead = 0;
    for await (const n of pair.client.remote.count(500)) {
      consumed = n;
      maxAhead = Math.max(maxAhead, produced - consumed);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    assert.equal(consumed, 500);
    // 1 KiB of credit holds a few hundred small items at most; without credit it would be 500.
    assert.ok(maxAhead < 450, `the producer ran ${maxAhead} items ahead`);
  },
);

natsTest("cancellation reaches the handler over NATS", async (nats) => {
  const handlerSaw = Promise.withResolvers<unknown>();
  await using pair = await channelPair(nats, {
    wait: (_ms, ctx) => untilAborted(ctx, handlerSaw),
  });
  const controller = new AbortController();
  const call = pair.client.remote.wait(0, { signal: controller.signal });
  await new Promise((resolve) => setTimeout(resolve, 20));
  controller.abort(new Error("user gave up"));
  await assert.rejects(call, /user gave up/);
  assert.ok(await handlerSaw.promise instanceof CallCancelledError);
});

natsTest("deadlines: the call rejects and the handler's signal fires", async (nats) => {
  const handlerSaw = Promise.withResolvers<unknown>();
  await using pair = await channelPair(nats, {
    wait: (_ms, ctx) => untilAborted(ctx, handlerSaw),
  });
  const error = await pair.client.remote.wait(0, { timeout: 50 }).catch((e) => e);
  assert.ok(error instanceof DeadlineExceededError, `got ${error}`);
  assert.ok(await handlerSaw.promise instanceof DeadlineExceededError);
  // The channel goes on.
  await assert.rejects(pair.client.remote.wait(0, { timeout: 10 }), DeadlineExceededError);
});

natsTest(
  "a server whose NATS connection closes settles pending calls with a typed error",
  async (nats) => {
    await using pair = await channelPair(nats, {
      wait: () => new Promise<string>(() => {}),
    });
    const pending = pair.client.remote.wait(0, { timeout: Infinity }).catch((e) => e);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await pair.serverNc.close();
    const error = await pending;
    assert.ok(error instanceof ConnectionClosedError, `got ${error}`);
  },
);

/** A handler that never finishes on its own: it rejects when its call's signal fires. */
function untilAborted(ctx: CallContext, saw: PromiseWithResolvers<unknown>): Promise<string> {
  return new Promise((_resolve, reject) => {
    ctx.signal.addEventListener("abort", () => {
      saw.resolve(ctx.signal.reason);
      reject(ctx.signal.reason);
    });
  });
}
