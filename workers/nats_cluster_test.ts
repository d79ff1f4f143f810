// Failover on a real 3-node NATS cluster (issue 29): a pool's client on one node, service
// instances on the others, every connection told every node and to reconnect forever. A
// service process, a service's node or the client's own node is killed mid-run; every
// retryable call is answered, none fails, and the effect of each call is applied once per
// call key on the handler side, however often it ran. CONDUIT_STRESS=N repeats each N times.

import assert from "node:assert/strict";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jsonCodec } from "../codecs/json.ts";
import {
  haveNatsServer,
  type NatsCluster,
  startNatsCluster,
} from "../transports/_test_nats_server.ts";
import { NatsServicePool } from "./nats_service_pool.ts";
import {
  type Ledger,
  startTestService,
  type TestService,
  type TestServiceApi,
} from "./_test_nats_service.ts";

const CALLS = 30;
/** How often each kill test runs: `CONDUIT_STRESS=5 deno task test` is the stress mode. */
const REPEATS = Math.max(1, Number(Deno.env.get("CONDUIT_STRESS") ?? 1) || 1);

/** A connection that tries `first` first, then the other nodes, forever. */
function dial(cluster: NatsCluster, first: number): Promise<NatsConnection> {
  const urls = [cluster.urls[first], ...cluster.urls.filter((_, i) => i !== first)];
  return connect({
    servers: urls,
    noRandomize: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 50,
  });
}

interface Run {
  cluster: NatsCluster;
  services: TestService[];
  pool: NatsServicePool<TestServiceApi>;
  ledger: Ledger;
  connections: NatsConnection[];
}

/** Services "a" on node 0 and "b" on node 1, the pool on node 2. */
async function setUp(cluster: NatsCluster): Promise<Run> {
  const ledger: Ledger = { runs: new Map(), effects: new Map() };
  const connections = await Promise.all([dial(cluster, 0), dial(cluster, 1), dial(cluster, 2)]);
  const services = await Promise.all([
    startTestService(connections[0], "pay", "a", ledger),
    startTestService(connections[1], "pay", "b", ledger),
  ]);
  const pool = new NatsServicePool<TestServiceApi>(connections[2], "pay", {
    codec: jsonCodec(),
    retryable: ["charge", "total"],
    maxAttempts: 4,
    transport: { heartbeat: 100 },
  });
  await pool.waitForInstances(2);
  return { cluster, services, pool, ledger, connections };
}

async function tearDown(run: Run): Promise<void> {
  await run.pool.close();
  await Promise.all(run.services.map((s) => s.stop().catch(() => {})));
  await Promise.all(run.connections.map((nc) => nc.isClosed() ? undefined : nc.close()));
  await run.cluster.stop();
}

/** Makes the calls, runs `fault` once they are in flight, and checks every answer. */
async function callThrough(run: Run, fault: () => Promise<void>): Promise<void> {
  const calls = Array.from(
    { length: CALLS },
    (_, n) => run.pool.remote.charge({ n, ms: 300 }, { timeout: 20_000 }),
  );
  while (run.pool.stats.inFlight < 10) await new Promise((resolve) => setTimeout(resolve, 5));
  // At a random point of the calls' 300 ms.
  await new Promise((resolve) => setTimeout(resolve, Math.random() * 250));
  await fault();
  const answers = await Promise.all(calls);
  assert.deepEqual(answers.map((a) => a.n), Array.from({ length: CALLS }, (_, n) => n));
  const stats = run.pool.stats;
  assert.equal(stats.failed, 0, JSON.stringify(stats));
  // One effect per call: every attempt of a call carried the same key.
  assert.equal(run.ledger.effects.size, CALLS, "effects applied");
  assert.deepEqual(
    [...run.ledger.effects.values()].sort((x, y) => x - y),
    Array.from({ length: CALLS }, (_, n) => n),
  );
  const twice = [...run.ledger.runs.values()].filter((count) => count > 1).length;
  console.log(
    `  ${CALLS} calls, ${stats.retried} retried, ${stats.failed} failed, ${twice} ran more ` +
      "than once (each applied once by its key)",
  );
}

const clusterTest = (name: string, fn: (run: Run) => Promise<void>) =>
  Deno.test({
    name: `nats cluster: ${name}`,
    ignore: !haveNatsServer,
    async fn() {
      for (let round = 0; round < REPEATS; round++) {
        const run = await setUp(await startNatsCluster(3));
        try {
          await fn(run);
        } finally {
          await tearDown(run);
        }
      }
    },
  });

clusterTest("a service process killed mid-run: no retryable call lost", async (run) => {
  await callThrough(run, () => run.services[0].crash());
});

clusterTest("a service's node killed mid-run: no retryable call lost", async (run) => {
  await callThrough(run, () => {
    Deno.kill(run.cluster.nodes[0].pid, "SIGKILL");
    return Promise.resolve();
  });
});

clusterTest("the client's own node killed mid-run: it reconnects, no call lost", async (run) => {
  const nc = run.connections[2];
  let reconnected = 0;
  const watching = (async () => {
    for await (const status of nc.status()) {
      if (status.type === "reconnect") {
        reconnected = performance.now();
        return;
      }
    }
  })();
  let killedAt = 0;
  await callThrough(run, () => {
    killedAt = performance.now();
    Deno.kill(run.cluster.nodes[2].pid, "SIGKILL");
    return Promise.resolve();
  });
  await watching;
  const after = reconnected - killedAt;
  console.log(`  the client reconnected ${Math.round(after)} ms after its node died`);
  assert.ok(reconnected > 0, "the client never reconnected");
});

clusterTest(
  "an upload whose receiver's node dies is sent whole again from its source",
  async (run) => {
    let attempt = 0;
    /** 1..2000, slowly enough that the kill lands mid-upload on the first attempt. */
    async function* numbers(first: boolean): AsyncGenerator<number> {
      for (let n = 1; n <= 2000; n++) {
        if (first && n === 200) {
          const receiver = run.services.find((s) => s.uploads.started > 0)!;
          Deno.kill(run.cluster.nodes[run.services.indexOf(receiver)].pid, "SIGKILL");
          await receiver.crash();
        }
        if (n % 100 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
        yield n;
      }
    }
    const answer = await run.pool.remote.total(() => numbers(attempt++ === 0), { timeout: 20_000 });
    assert.equal(answer.total, 2000 * 2001 / 2);
    assert.equal(attempt, 2);
    console.log(`  upload of 2,000 numbers: ${attempt} attempts, total ${answer.total} (checked)`);
  },
);

clusterTest("a download while another instance's node dies arrives whole", async (run) => {
  const count = 3000;
  const items: string[] = [];
  for await (const item of run.pool.remote.items(count)) {
    items.push(item);
    if (items.length === 100) {
      const other = run.services.findIndex((s) => !item.startsWith(`${s.instance}:`));
      Deno.kill(run.cluster.nodes[other].pid, "SIGKILL");
    }
  }
  const instance = items[0].split(":")[0];
  assert.deepEqual(items, Array.from({ length: count }, (_, i) => `${instance}:${i}`));
  console.log(`  download across the other node's death: ${items.length} of ${count}, whole`);
});

clusterTest(
  "a download whose instance dies mid-stream: a typed error, never cut short",
  async (run) => {
    // Stream calls are not retried: the caller gets a typed error, never a short success.
    // Far more than one credit window of items: the producer is still sending when it dies.
    const count = 200_000;
    const items: string[] = [];
    const error = await (async () => {
      for await (const item of run.pool.remote.items(count)) {
        items.push(item);
        if (items.length === 100) {
          const owner = item.split(":")[0];
          await run.services.find((s) => s.instance === owner)!.crash();
        }
      }
    })().then(() => undefined, (e) => e);
    assert.ok(error instanceof Error, `a download of ${items.length} items ended as a success`);
    assert.ok(items.length >= 100 && items.length < count, `${items.length} items`);
    console.log(`  download whose instance died: ${error.name} after ${items.length} items`);
  },
);
