// Workers: what a worker process costs to start and to call.
//
//   deno bench -A bench/workers_bench.ts
//
// "spawn-to-first-reply" runs from the spawnWorker() call to the answer of the first call,
// so it covers process start, module load, the handshake and one round trip. Its baseline is
// bare Deno: the time from spawning `deno run` on a one-line program to the first byte it
// writes to stdout. Closing a worker is not timed.
//
// Fixtures (workers, pools) for the per-call cases are started at load time.

import {
  spawnWorker,
  type WorkerHandle,
  type WorkerTransportKind,
} from "../workers/spawn_worker.ts";
import { WorkerPool } from "../workers/worker_pool.ts";
import { bareFirstByte } from "./_peers.ts";
import type { PingApi } from "./_ping_worker.ts";

const WORKER = new URL("./_ping_worker.ts", import.meta.url);

/** Calls `ping` `calls` times from `callers` concurrent loops; calls per second. */
async function poolRate(
  pool: WorkerPool<PingApi>,
  calls: number,
  callers: number,
): Promise<number> {
  const started = performance.now();
  await Promise.all(Array.from({ length: callers }, async () => {
    for (let i = 0; i < calls / callers; i++) await pool.remote.ping();
  }));
  return calls / ((performance.now() - started) / 1000);
}

await benches();

async function benches(): Promise<void> {
  const workers: Record<WorkerTransportKind, WorkerHandle<PingApi>> = {
    stdio: await spawnWorker<PingApi>(WORKER, { transport: "stdio" }),
    unix: await spawnWorker<PingApi>(WORKER, { transport: "unix" }),
  };
  const pools = {
    serial: new WorkerPool<PingApi>(WORKER, { size: 2, concurrency: 1 }),
    pipelined: new WorkerPool<PingApi>(WORKER, { size: 2, concurrency: 16 }),
  };
  await Promise.all([pools.serial.started(), pools.pipelined.started()]);
  globalThis.addEventListener("unload", () => {
    for (const worker of Object.values(workers)) void worker.kill();
    for (const pool of Object.values(pools)) void pool.close();
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
  for (const transport of ["stdio", "unix"] as const) {
    Deno.bench({
      ...spawnGroup,
      name: `workers/spawn-to-first-reply ${transport}`,
      async fn(b) {
        b.start();
        const worker = await spawnWorker<PingApi>(WORKER, { transport });
        await worker.remote.ping();
        b.end();
        await worker.close();
      },
    });
  }

  for (const transport of ["stdio", "unix"] as const) {
    Deno.bench({
      group: "workers/ping",
      name: `workers/ping ${transport}`,
      baseline: transport === "stdio",
      async fn() {
        await workers[transport].remote.ping();
      },
    });
  }

  Deno.bench({
    group: "workers/pool",
    name: "workers/pool 1000 pings, 2 workers, concurrency 1, 4 callers",
    baseline: true,
    async fn() {
      await poolRate(pools.serial, 1000, 4);
    },
  });
  Deno.bench({
    group: "workers/pool",
    name: "workers/pool 1000 pings, 2 workers, concurrency 16, 64 callers",
    async fn() {
      await poolRate(pools.pipelined, 1000, 64);
    },
  });
}
