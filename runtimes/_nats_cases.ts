// The NATS cases, registered by each runtime's runner beside _cases.ts: conduit's NATS transport,
// serve() over it and a NatsServicePool, against a real nats-server on loopback. Where
// nats-server is missing they pass at once and say so (`.ci/run` installs it).

import assert from "node:assert/strict";
import { AuthenticationError, openChannel, serve } from "../channel/mod.ts";
import { jsonCodec } from "../codecs/json.ts";
import { connectNats, listenNats } from "../transports/nats.ts";
import { NatsServicePool } from "../workers/nats_service_pool.ts";
import { runtimeName } from "../_runtime.ts";
import {
  haveNatsServer,
  type NatsServer,
  startNatsServer,
} from "../transports/_test_nats_server.ts";
import { range, type RuntimeCase } from "./_cases.ts";
import { streamHandlers } from "./_stream_handlers.ts";

/** The NATS cases every runner registers, in order. */
export const natsCases: RuntimeCase[] = [];

const handlers = { add: ({ a, b }: { a: number; b: number }) => a + b, ...streamHandlers };

function add(name: string, fn: (server: NatsServer) => Promise<void>): void {
  natsCases.push({
    name: `nats: ${name}`,
    async fn() {
      if (!haveNatsServer) {
        console.warn(`nats-server is not installed: skipped "${name}" on ${runtimeName()}`);
        return;
      }
      const server = await startNatsServer();
      try {
        await fn(server);
      } finally {
        await server.stop();
      }
    },
  });
}

add("a channel's calls and streams both ways, through listenNats and connectNats", async (nats) => {
  const [serverNc, clientNc] = await Promise.all([nats.connect(), nats.connect()]);
  const listener = await listenNats(serverNc, "runtimes.math", { queue: "math" });
  const accepted = listener.accept();
  const client = await connectNats(clientNc, "runtimes.math");
  const [serving, calling] = await Promise.all([
    openChannel(await accepted, { codec: jsonCodec(), handlers }),
    openChannel<typeof handlers>(client, { codec: jsonCodec() }),
  ]);
  try {
    assert.equal(await calling.remote.add({ a: 2, b: 3 }), 5);
    const counted: number[] = [];
    for await (const n of calling.remote.count(5)) counted.push(n);
    assert.deepEqual(counted, [1, 2, 3, 4, 5]);
    assert.equal(await calling.remote.sum(ReadableStream.from(range(1, 100))), 5050);
  } finally {
    await calling.close();
    await serving.closed;
    await listener.close();
  }
});

add("no listener on a subject refuses connectNats with the runtime's refusal", async (nats) => {
  const nc = await nats.connect();
  const error = await connectNats(nc, "runtimes.nobody").then(
    () => assert.fail("connectNats to a subject nobody serves resolved"),
    (error: unknown) => error as Error & { code?: string },
  );
  assert.match(error.message, /No conduit listener answers on NATS subject runtimes\.nobody/);
  if (runtimeName() === "deno") assert.ok(error instanceof Deno.errors.ConnectionRefused);
  else assert.equal(error.code, "ECONNREFUSED");
});

add("serve() with a shared secret: the right secret calls, a wrong one fails", async (nats) => {
  const [serverNc, clientNc] = await Promise.all([nats.connect(), nats.connect()]);
  const server = serve(await listenNats(serverNc, "runtimes.secret", { queue: "secret" }), {
    codec: jsonCodec(),
    handlers,
    auth: { secret: "correct horse battery staple" },
  });
  try {
    const good = await openChannel<typeof handlers>(
      await connectNats(clientNc, "runtimes.secret"),
      {
        codec: jsonCodec(),
        auth: { secret: "correct horse battery staple" },
      },
    );
    assert.equal(await good.remote.add({ a: 20, b: 22 }), 42);
    await good.close();
    await assert.rejects(
      openChannel(await connectNats(clientNc, "runtimes.secret"), {
        codec: jsonCodec(),
        auth: { secret: "wrong horse battery staple" },
      }),
      AuthenticationError,
    );
  } finally {
    await server.close();
  }
});

add("a NatsServicePool spreads calls over the instances it discovers", async (nats) => {
  const instances = ["a", "b"];
  const seen = new Set<string>();
  const servers = await Promise.all(instances.map(async (instance) => {
    const nc = await nats.connect();
    const listener = await listenNats(nc, "runtimes.pool", { queue: "pool", instance });
    return serve(listener, {
      codec: jsonCodec(),
      handlers: {
        whoami: async () => {
          seen.add(instance);
          // Long enough that two calls in flight land on two instances.
          await new Promise((resolve) => setTimeout(resolve, 50));
          return instance;
        },
      },
    });
  }));
  const pool = new NatsServicePool<{ whoami(): string }>(await nats.connect(), "runtimes.pool", {
    codec: jsonCodec(),
  });
  try {
    await pool.waitForInstances(2);
    const answers = await Promise.all(Array.from({ length: 8 }, () => pool.remote.whoami()));
    assert.deepEqual(new Set(answers), new Set(instances));
    assert.deepEqual(seen, new Set(instances));
  } finally {
    await pool.close();
    await Promise.all(servers.map((server) => server.close()));
  }
});
