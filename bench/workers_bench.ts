// Workers: what a worker process costs to start and to call.
//
//   deno bench -A bench/workers_bench.ts          the Deno.bench cases below
//   deno run -A bench/workers_bench.ts [--runs 20] [--calls 20000]   a table:
//       spawn-to-first-reply (median of --runs spawns, each transport), ping-pong p50/p99,
//       and pool calls/s with 2 workers
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
import { bareFirstByte } from "./_bare_deno.ts";
import type { PingApi } from "./_ping_worker.ts";

const WORKER = new URL("./_ping_worker.ts", import.meta.url);

/** Spawns a worker and resolves with the time to its first reply, in ms; then closes it. */
async function spawnToFirstReply(transport: WorkerTransportKind): Promise<number> {
  const started = performance.now();
  const worker = await spawnWorker<PingApi>(WORKER, { transport });
  await worker.remote.ping();
  const elapsed = performance.now() - started;
  await worker.close();
  return elapsed;
}

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

if (import.meta.main) {
  await table(Number(flag("--runs") ?? 20), Number(flag("--calls") ?? 20_000));
} else {
  await benches();
}

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

async function table(runs: number, calls: number): Promise<void> {
  const rows: string[][] = [["case", "median", "p90", "min", "unit"]];
  const add = (name: string, samples: number[], unit: string, digits = 0) => {
    const sorted = samples.toSorted((a, b) => a - b);
    const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
    rows.push(
      [name, at(0.5), at(0.9), sorted[0]].map((v, i) =>
        i === 0 ? String(v) : (v as number).toFixed(digits)
      ).concat(unit),
    );
  };

  await bareFirstByte();
  const bare: number[] = [];
  for (let i = 0; i < runs; i++) bare.push(await bareFirstByte());
  add("bare deno: spawn to first byte", bare, "ms");
  for (const transport of ["stdio", "unix"] as const) {
    await spawnToFirstReply(transport);
    const samples: number[] = [];
    for (let i = 0; i < runs; i++) samples.push(await spawnToFirstReply(transport));
    add(`spawn-to-first-reply, ${transport}`, samples, "ms");
  }

  for (const transport of ["stdio", "unix"] as const) {
    const worker = await spawnWorker<PingApi>(WORKER, { transport });
    for (let i = 0; i < 1000; i++) await worker.remote.ping();
    const samples: number[] = [];
    for (let i = 0; i < calls / 4; i++) {
      const started = performance.now();
      await worker.remote.ping();
      samples.push((performance.now() - started) * 1000);
    }
    await worker.close();
    const sorted = samples.toSorted((a, b) => a - b);
    const p99 = sorted[Math.floor(0.99 * sorted.length)];
    add(`ping-pong, ${transport} (p99 ${p99.toFixed(0)} µs)`, samples, "µs");
  }

  for (const [concurrency, callers] of [[1, 4], [16, 64]]) {
    const pool = new WorkerPool<PingApi>(WORKER, { size: 2, concurrency });
    await pool.started();
    await poolRate(pool, 2000, callers);
    const rates: number[] = [];
    for (let i = 0; i < 5; i++) rates.push(await poolRate(pool, calls / 5, callers));
    await pool.close();
    add(
      `pool calls/s, 2 workers, concurrency ${concurrency}, ${callers} callers`,
      rates,
      "calls/s",
    );
  }

  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  for (const [n, row] of rows.entries()) {
    console.log(
      row.map((cell, i) => i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i])).join("  "),
    );
    if (n === 0) console.log(widths.map((w) => "-".repeat(w)).join("  "));
  }
  console.log(
    `(${runs} spawns per case, ${calls / 4} pings per transport, pool: 5 runs of ${
      calls / 5
    } calls)`,
  );
}

function flag(name: string): string | undefined {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : undefined;
}
