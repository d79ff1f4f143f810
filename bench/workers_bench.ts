// Workers: what a worker process costs to start and to call.
//
//   deno bench -A bench/workers_bench.ts
//
// "spawn-to-first-reply" runs from the spawnWorker() call to the answer of the first call,
// so it covers process start, module load, the handshake and one round trip. Its baseline is
// bare Deno: the time from spawning `deno eval` of a one-line program to the first byte it
// writes to stdout. Closing a worker is not timed.
//
// Fixtures (workers, pools) for the per-call cases are started at load time.

import { spawnWorker } from "../workers/spawn_worker.ts";
import { WorkerPool } from "../workers/worker_pool.ts";
import { bareFirstByte, PING_WORKER } from "./_peers.ts";
import type { PingApi } from "./_ping_worker.ts";

const TRANSPORTS = ["stdio", "unix"] as const;
const workers = await Promise.all(
  TRANSPORTS.map((transport) => spawnWorker<PingApi>(PING_WORKER, { transport })),
);
const pools = [[1, 4], [16, 64]].map(([concurrency, callers]) => ({
  concurrency,
  callers,
  pool: new WorkerPool<PingApi>(PING_WORKER, { size: 2, concurrency }),
}));
await Promise.all(pools.map(({ pool }) => pool.started()));
globalThis.addEventListener("unload", () => {
  for (const worker of workers) void worker.kill();
  for (const { pool } of pools) void pool.close();
});

const spawnGroup = { group: "workers/spawn", n: 20, warmup: 2 };
Deno.bench({
  ...spawnGroup,
  name: "workers/spawn bare deno to first byte",
  baseline: true,
  async fn(b) {
    b.start();
    await bareFirstByte();
    b.end();
  },
});
for (const transport of TRANSPORTS) {
  Deno.bench({
    ...spawnGroup,
    name: `workers/spawn-to-first-reply ${transport}`,
    async fn(b) {
      b.start();
      const worker = await spawnWorker<PingApi>(PING_WORKER, { transport });
      await worker.remote.ping();
      b.end();
      await worker.close();
    },
  });
}

TRANSPORTS.forEach((transport, i) =>
  Deno.bench({
    group: "workers/ping",
    name: `workers/ping ${transport}`,
    baseline: i === 0,
    fn: async () => void await workers[i].remote.ping(),
  })
);

for (const { concurrency, callers, pool } of pools) {
  Deno.bench({
    group: "workers/pool",
    name: `workers/pool 1000 pings, 2 workers, concurrency ${concurrency}, ${callers} callers`,
    baseline: concurrency === 1,
    async fn() {
      await Promise.all(Array.from({ length: callers }, async () => {
        for (let i = 0; i < 1000 / callers; i++) await pool.remote.ping();
      }));
    },
  });
}
