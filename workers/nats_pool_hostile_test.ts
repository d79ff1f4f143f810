// Hostile clients of a NatsServicePool's discovery: other NATS clients on the same server
// (no secret) that announce instances which are not what they say.

import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { type NatsServer, natsServerTest } from "../transports/_test_nats_server.ts";
import { NatsServicePool } from "./nats_service_pool.ts";
import { startTestService, type TestServiceApi } from "./_test_nats_service.ts";

const attack = (name: string, fn: (server: NatsServer) => Promise<void>) =>
  natsServerTest(`nats attack: ${name}`, fn);

attack(
  "announcements naming another subject do not make the pool dial it",
  async (server) => {
    const real = await startTestService(await server.connect(), "svc", "real");
    const [poolNc, liar] = await Promise.all([server.connect(), server.connect()]);
    const pool = new NatsServicePool<TestServiceApi>(poolNc, "svc", {
      codec: jsonCodec(),
      transport: { heartbeat: 100 },
    });
    await pool.waitForInstances(1);
    // Fifty "instances" whose subject is the service's queue subject: each would be one more
    // connection (subscription, heartbeat, channel) from the pool to the same real instance,
    // and their calls would go wherever the announcement says.
    for (let i = 0; i < 50; i++) {
      liar.publish(
        "svc.announce",
        JSON.stringify({ protocol: "conduit-nats/1", instance: `fake${i}`, subject: "svc" }),
      );
    }
    await liar.flush();
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.deepEqual(
      pool.instances.map((i) => i.instance),
      ["real"],
      `the pool holds ${pool.stats.connections} connections`,
    );
    assert.equal(pool.stats.connections, 1);
    assert.equal((await pool.remote.work({ n: 1, ms: 0 })).instance, "real");
    await pool.close();
    await real.stop();
  },
);

attack(
  "a closed pool leaves nothing on the NATS connection it was given",
  async (server) => {
    const nc = await server.connect();
    // nats.js keeps each status() iterator in this list until the iterator stops; one that a
    // closed pool left there keeps that pool (its members, queue, channels) alive as long as
    // the connection lives.
    const listeners = (nc as unknown as { protocol: { listeners: unknown[] } }).protocol.listeners;
    const before = listeners.length;
    for (let i = 0; i < 20; i++) {
      const pool = new NatsServicePool<TestServiceApi>(nc, "nobody", { codec: jsonCodec() });
      await pool.close();
    }
    // Let the iterators of closed pools finish, as they would on their own.
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(listeners.length - before, 0, "status() iterators left by closed pools");
  },
);
