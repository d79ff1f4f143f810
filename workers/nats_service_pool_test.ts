import assert from "node:assert/strict";
import { ConnectionClosedError, DeadlineExceededError } from "../channel/errors.ts";
import { jsonCodec } from "../codecs/json.ts";
import { TransportClosedError } from "../errors.ts";
import { connect } from "@nats-io/transport-node";
import {
  type NatsServer,
  natsServerTest,
  startNatsServer,
} from "../transports/_test_nats_server.ts";
import { CallNotReplayableError, PoolClosedError } from "./errors.ts";
import { type NatsPoolEvent, NatsServicePool } from "./nats_service_pool.ts";
import { startTestService, type TestService, type TestServiceApi } from "./_test_nats_service.ts";

const poolTest = (name: string, fn: (server: NatsServer) => Promise<void>) =>
  natsServerTest(`nats pool: ${name}`, fn);

async function services(server: NatsServer, ids: string[]): Promise<TestService[]> {
  return await Promise.all(
    ids.map(async (id) => startTestService(await server.connect(), "svc", id)),
  );
}

function poolOf(
  nc: Awaited<ReturnType<NatsServer["connect"]>>,
  events: NatsPoolEvent[] = [],
  discoveryInterval = 1000,
): NatsServicePool<TestServiceApi> {
  return new NatsServicePool<TestServiceApi>(nc, "svc", {
    codec: jsonCodec(),
    retryable: ["work"],
    transport: { heartbeat: 100 },
    discoveryInterval,
    onEvent: (event) => events.push(event),
  });
}

poolTest("spreads calls over every instance, least-loaded first", async (server) => {
  const instances = await services(server, ["a", "b", "c"]);
  const pool = poolOf(await server.connect());
  await pool.waitForInstances(3);
  const results = await Promise.all(
    Array.from({ length: 60 }, (_, n) => pool.remote.work({ n, ms: 30 })),
  );
  assert.deepEqual(results.map((r) => r.n), Array.from({ length: 60 }, (_, n) => n));
  // Equal work and equal latency: the least-loaded choice gives each instance a third.
  for (const instance of instances) assert.equal(instance.answered.length, 20, instance.instance);
  assert.deepEqual(
    pool.instances.map((i) => [i.instance, i.completed, i.connections]),
    [["a", 20, 1], ["b", 20, 1], ["c", 20, 1]],
  );
  assert.equal(pool.stats.completed, 60);
  await pool.close();
  await Promise.all(instances.map((s) => s.stop()));
});

poolTest(
  "an instance that dies: its retryable calls run again elsewhere, the others fail",
  async (server) => {
    const [a, b] = await services(server, ["a", "b"]);
    const events: NatsPoolEvent[] = [];
    const pool = poolOf(await server.connect(), events);
    await pool.waitForInstances(2);
    const work = Array.from({ length: 20 }, (_, n) => pool.remote.work({ n, ms: 300 }));
    const once = Array.from({ length: 4 }, (_, n) => pool.remote.once({ n: 100 + n, ms: 300 }));
    const settled = Promise.allSettled([...work, ...once]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await b.crash();
    const results = await settled;
    // Every retryable call was answered, each once, the ones b had by a.
    const answers = results.slice(0, 20).map((r) => {
      assert.equal(r.status, "fulfilled");
      return r.value as { instance: string; n: number };
    });
    assert.deepEqual(answers.map((r) => r.n), Array.from({ length: 20 }, (_, n) => n));
    assert.equal(answers.filter((r) => r.instance === "b").length, 0, "b answered nothing");
    assert.equal(a.answered.filter((n) => n < 100).length, 20);
    // The non-retryable calls b had fail with the connection; a's succeed.
    const lost = results.slice(20).filter((r) => r.status === "rejected");
    assert.equal(lost.length, 2);
    for (const r of lost) assert.ok(r.reason instanceof ConnectionClosedError, String(r.reason));
    assert.equal(pool.stats.retried, 10);
    assert.deepEqual(events.filter((e) => e.type === "retry").length, 10);
    const left = events.find((e) => e.type === "left");
    assert.equal(left?.instance, "b");
    assert.equal(left?.type === "left" && left.reason, "failed");
    assert.deepEqual(pool.instances.map((i) => i.instance), ["a"]);
    await pool.close();
    await a.stop();
    await b.settled();
  },
);

poolTest("a retryable call is tried at most maxAttempts times", async (server) => {
  const [a, b] = await services(server, ["a", "b"]);
  const pool = new NatsServicePool<TestServiceApi>(await server.connect(), "svc", {
    codec: jsonCodec(),
    retryable: ["work"],
    maxAttempts: 2,
    transport: { heartbeat: 100 },
  });
  await pool.waitForInstances(2);
  // One call on each; b's dies with b and runs again on a, its second and last attempt.
  const first = pool.remote.work({ n: 0, ms: 1000 });
  const second = pool.remote.work({ n: 1, ms: 1000 });
  const settled = Promise.allSettled([first, second]);
  await new Promise((resolve) => setTimeout(resolve, 50));
  await b.crash();
  while (pool.stats.retried === 0) await new Promise((resolve) => setTimeout(resolve, 10));
  await a.crash();
  // The retried call has used its attempts and fails; the other one, on its first attempt,
  // waits for an instance until the pool closes.
  while (pool.stats.queued + pool.stats.failed < 2) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.equal(pool.stats.retried, 2);
  assert.equal(pool.stats.failed, 1);
  await pool.close();
  const results = await settled;
  const reasons = results.map((r) => r.status === "rejected" && r.reason);
  assert.ok(reasons.some((r) => r instanceof ConnectionClosedError), String(reasons));
  assert.ok(reasons.some((r) => r instanceof PoolClosedError), String(reasons));
  await Promise.all([a.settled(), b.settled()]);
});

poolTest("a retried call waiting for an instance still meets its deadline", async (server) => {
  const [a] = await services(server, ["a"]);
  const pool = poolOf(await server.connect());
  await pool.waitForInstances(1);
  const call = pool.remote.work({ n: 0, ms: 1000 }, { timeout: 1500 });
  await new Promise((resolve) => setTimeout(resolve, 50));
  await a.crash();
  await assert.rejects(call, DeadlineExceededError);
  assert.equal(pool.stats.retried, 1);
  await pool.close();
  await a.settled();
});

poolTest("a new instance is found and used; one that closes gets no new calls", async (server) => {
  const [a] = await services(server, ["a"]);
  const events: NatsPoolEvent[] = [];
  const pool = poolOf(await server.connect(), events);
  await pool.waitForInstances(1);
  const [b] = await services(server, ["b"]);
  // Its announcement reaches the pool at once (the probe interval is 1 s).
  await pool.waitForInstances(2);
  assert.deepEqual(events.map((e) => e.type === "joined" && e.instance), ["a", "b"]);
  await Promise.all(Array.from({ length: 10 }, (_, n) => pool.remote.work({ n, ms: 20 })));
  assert.equal(b.answered.length, 5);
  await b.stop();
  while (pool.stats.instances > 1) await new Promise((resolve) => setTimeout(resolve, 10));
  const left = events.at(-1);
  assert.ok(left?.type === "left" && left.instance === "b" && left.reason === "closed");
  await Promise.all(Array.from({ length: 10 }, (_, n) => pool.remote.work({ n, ms: 1 })));
  assert.equal(a.answered.length, 15);
  assert.equal(pool.stats.failed, 0);
  await pool.close();
  await a.stop();
});

poolTest("instances that started before the pool are found by its probe", async (server) => {
  // Their announcements went out before the pool listened: the probe finds them.
  const [a, b] = await services(server, ["a", "b"]);
  const events: NatsPoolEvent[] = [];
  const pool = poolOf(await server.connect(), events, 100);
  await pool.waitForInstances(2);
  assert.deepEqual(events.map((e) => e.type === "joined" && e.instance).sort(), ["a", "b"]);
  const answers = await Promise.all([0, 1].map((n) => pool.remote.work({ n, ms: 10 })));
  assert.deepEqual(answers.map((r) => r.instance).sort(), ["a", "b"]);
  await pool.close();
  await Promise.all([a.stop(), b.stop()]);
});

poolTest("calls wait for an instance; a deadline or close() settles them", async (server) => {
  const pool = poolOf(await server.connect());
  await assert.rejects(
    pool.remote.work({ n: 0, ms: 0 }, { timeout: 100 }),
    DeadlineExceededError,
  );
  const controller = new AbortController();
  const aborted = pool.remote.work({ n: 0, ms: 0 }, { signal: controller.signal });
  controller.abort(new Error("stop"));
  await assert.rejects(aborted, { message: "stop" });
  const waiting = pool.remote.work({ n: 7, ms: 0 });
  const [a] = await services(server, ["a"]);
  assert.deepEqual(await waiting, { instance: "a", n: 7 });
  await a.stop();
  while (pool.stats.instances > 0) await new Promise((resolve) => setTimeout(resolve, 10));
  const never = pool.remote.work({ n: 8, ms: 0 });
  const queuedOnClose = assert.rejects(pool.waitForInstances(5), PoolClosedError);
  await pool.close();
  await queuedOnClose;
  await assert.rejects(never, PoolClosedError);
  await assert.rejects(pool.remote.work({ n: 9, ms: 0 }), PoolClosedError);
  assert.equal(pool.stats.completed, 1);
  assert.equal(pool.stats.failed, 4);
});

poolTest("stream calls run through the pool, each on one instance", async (server) => {
  const instances = await services(server, ["a", "b"]);
  const pool = poolOf(await server.connect());
  await pool.waitForInstances(2);
  const streams = await Promise.all(
    [0, 1, 2, 3].map(async () => {
      const items: string[] = [];
      for await (const item of pool.remote.items(50)) items.push(item);
      return items;
    }),
  );
  for (const items of streams) {
    assert.equal(items.length, 50);
    const instance = items[0].split(":")[0];
    assert.deepEqual(items, Array.from({ length: 50 }, (_, i) => `${instance}:${i}`));
  }
  assert.deepEqual(pool.instances.map((i) => [i.instance, i.completed]), [["a", 2], ["b", 2]]);
  await pool.close();
  await Promise.all(instances.map((s) => s.stop()));
});

poolTest("when its NATS connection closes, waiting and new calls fail", async (server) => {
  const nc = await server.connect();
  const pool = poolOf(nc);
  const waiting = pool.remote.work({ n: 0, ms: 0 });
  const instances = pool.waitForInstances(1);
  await nc.close();
  await assert.rejects(waiting, TransportClosedError);
  await assert.rejects(instances, TransportClosedError);
  await assert.rejects(pool.remote.work({ n: 1, ms: 0 }), {
    name: "TransportClosedError",
    message: "The pool's NATS connection closed: cannot reach svc",
  });
  await pool.close();
});

poolTest("several connections per instance share its calls", async (server) => {
  const instances = await services(server, ["a", "b"]);
  const pool = new NatsServicePool<TestServiceApi>(await server.connect(), "svc", {
    codec: jsonCodec(),
    connectionsPerInstance: 3,
  });
  await pool.waitForInstances(2);
  while (pool.stats.connections < 6) await new Promise((resolve) => setTimeout(resolve, 10));
  await Promise.all(Array.from({ length: 30 }, (_, n) => pool.remote.work({ n, ms: 20 })));
  assert.deepEqual(pool.instances.map((i) => [i.instance, i.connections, i.completed]), [
    ["a", 3, 15],
    ["b", 3, 15],
  ]);
  await pool.close();
  await Promise.all(instances.map((s) => s.stop()));
});

poolTest(
  "when its NATS connection drops, retryable calls wait for the reconnect, none is lost",
  async (first) => {
    // Clients that reconnect at once, forever, so that the server can die and come back.
    const dial = () =>
      connect({ servers: first.url, reconnectTimeWait: 20, maxReconnectAttempts: -1 });
    const clients = await Promise.all([dial(), dial(), dial()]);
    const [a, b] = await Promise.all(
      ["a", "b"].map((id, i) => startTestService(clients[i], "svc", id)),
    );
    const pool = poolOf(clients[2]);
    await pool.waitForInstances(2);
    const calls = Array.from({ length: 20 }, (_, n) => pool.remote.work({ n, ms: 400 }));
    while (pool.stats.inFlight < 20) await new Promise((resolve) => setTimeout(resolve, 5));
    // Every channel of the pool runs over the one connection that now breaks; the server
    // comes back only once the channels' heartbeats have given every one of them up.
    Deno.kill(first.pid, "SIGKILL");
    while (pool.stats.connections > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await using _again = await startNatsServer("", first.port);
    const answers = await Promise.all(calls);
    assert.deepEqual(answers.map((r) => r.n), Array.from({ length: 20 }, (_, n) => n));
    const stats = pool.stats;
    assert.equal(stats.failed, 0);
    assert.equal(stats.completed, 20);
    // Each call ran again once, on a channel dialled after the reconnect.
    assert.equal(stats.retried, 20);
    await pool.close();
    await Promise.all([a.stop(), b.stop()]);
    await Promise.all(clients.map((nc) => nc.isClosed() ? undefined : nc.close()));
  },
);

/** Yields 1..100; after the 10th value, `pause` (if any) before the rest. */
async function* oneToHundred(pause?: () => Promise<void>): AsyncGenerator<number> {
  for (let n = 1; n <= 100; n++) {
    if (n === 11 && pause) await pause();
    yield n;
  }
}

poolTest(
  "a retryable call's stream param: one-shot is not re-sent, a source function is",
  async (server) => {
    const instances = await services(server, ["a", "b"]);
    const pool = new NatsServicePool<TestServiceApi>(await server.connect(), "svc", {
      codec: jsonCodec(),
      retryable: ["total"],
      transport: { heartbeat: 100 },
    });
    await pool.waitForInstances(2);
    /** Crashes the instance that started receiving the upload; the other one is left. */
    const crashReceiver = async (): Promise<void> => {
      while (!instances.some((i) => i.uploads.started > 0)) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const receiver = instances.find((i) => i.uploads.started > 0)!;
      instances.splice(instances.indexOf(receiver), 1);
      await receiver.crash();
      await receiver.settled();
    };
    const oneShot = await pool.remote.total(oneToHundred(crashReceiver)).then(
      (answer) => assert.fail(`a wrong success: ${JSON.stringify(answer)}`),
      (e) => e,
    );
    assert.ok(oneShot instanceof CallNotReplayableError, String(oneShot));
    assert.ok(oneShot.cause instanceof ConnectionClosedError, String(oneShot.cause));
    assert.equal(pool.stats.retried, 0);
    // Again, with a source function: the first attempt's receiver crashes, the second is whole.
    const more = await services(server, ["c"]);
    instances.push(...more);
    await pool.waitForInstances(2);
    for (const i of instances) i.uploads.started = 0;
    let attempts = 0;
    const answer = await pool.remote.total(() =>
      oneToHundred(attempts++ === 0 ? crashReceiver : undefined)
    );
    assert.equal(attempts, 2);
    assert.equal(answer.total, 5050);
    assert.equal(pool.stats.retried, 1);
    await pool.close();
    await Promise.all(instances.map((s) => s.stop()));
  },
);

Deno.test("nats pool: options out of range are RangeErrors naming them", () => {
  const nc = {} as never;
  assert.throws(
    () => new NatsServicePool(nc, "svc", { codec: jsonCodec(), concurrency: 0 }),
    {
      name: "RangeError",
      message: "concurrency must be an integer from 1 to 9007199254740991, got 0",
    },
  );
  assert.throws(
    () => new NatsServicePool(nc, "svc", { codec: jsonCodec(), discoveryInterval: -1 }),
    { name: "RangeError", message: "discoveryInterval must be a number above 0, got -1" },
  );
});
