/**
 * A typed worker pool at work: counts the primes below 100 million, first in this process
 * alone (the baseline), then on a pool of two worker processes, then on a pool of two thread
 * workers (Web Workers of this process, `thread: true`); measures round trips, streams primes
 * from a worker, then prints a table with each pool's speed-up over the baseline.
 *
 *   deno run --allow-run --allow-read examples/worker_pool_demo.ts [--workers 2]
 *
 * The worker processes run `examples/_prime_worker.ts` with no permissions at all: the parent
 * needs `--allow-run` to start them. The thread workers run the same module with this
 * process's permissions (`--allow-read` lets the parent load it into a Worker). The speed-up
 * needs idle cores: on a machine whose cores are busy with other work, a pool may well be
 * slower than the single process.
 *
 * @module
 */

import { WorkerPool, type WorkerPoolStats } from "@conduit/ipc/workers";
import type { PrimeApi } from "./_prime_worker.ts";
import { countPrimes } from "./_primes.ts";

const WORKER = new URL("./_prime_worker.ts", import.meta.url);
/** π(10^8), to check the answer. */
const PRIMES_BELOW_1E8 = 5_761_455;
const LIMIT = 100_000_000;
const CHUNK = 1_000_000;
const ROUND_TRIPS = 10_000;
/** Callers that each make one round trip after the other, so the queue stays short. */
const CALLERS = 4;

const size = Number(flag("--workers") ?? 2);

interface Row {
  phase: string;
  /** Who did the work: "in-proc", or e.g. "2 proc" / "2 thr". */
  workers: string;
  calls: number;
  seconds: number;
  latencies: number[];
  note: string;
}

const rows: Row[] = [];

// 0. The baseline: the same 100 ranges, one after the other, in this process.
const baseline = (() => {
  const latencies: number[] = [];
  let total = 0;
  const started = performance.now();
  for (let i = 0; i < LIMIT / CHUNK; i++) {
    const sent = performance.now();
    total += countPrimes({ from: i * CHUNK, to: (i + 1) * CHUNK });
    latencies.push(performance.now() - sent);
  }
  const seconds = (performance.now() - started) / 1000;
  if (total !== PRIMES_BELOW_1E8) throw new Error(`π(1e8) came out as ${total}`);
  const row: Row = {
    phase: "count primes < 1e8",
    workers: "in-proc",
    calls: latencies.length,
    seconds,
    latencies,
    note: "single process, no workers (baseline)",
  };
  rows.push(row);
  return row;
})();

/** What one pool did, for the summary lines. */
interface PoolRun {
  kind: "process" | "thread";
  spawnToFirstReply: number;
  seconds: number;
  stats: WorkerPoolStats;
}

const runs: PoolRun[] = [];
for (const kind of ["process", "thread"] as const) runs.push(await runPool(kind));

printTable(rows);
for (const run of runs) {
  console.log(
    `count primes < 1e8 on ${size} ${kind(run)}: ${run.seconds.toFixed(2)} s (${
      (baseline.seconds / run.seconds).toFixed(2)
    }× the one-process baseline's ${baseline.seconds.toFixed(2)} s); spawn-to-first-reply ${
      run.spawnToFirstReply.toFixed(0)
    } ms; ${run.stats.completed} calls completed, ${run.stats.failed} failed, ` +
      `${run.stats.crashes} crashes`,
  );
}

/** Runs the three phases on a pool of `size` workers of `kind`, adding their rows. */
async function runPool(kind: "process" | "thread"): Promise<PoolRun> {
  const spawnStart = performance.now();
  await using pool = new WorkerPool<PrimeApi>(WORKER, { size, thread: kind === "thread" });
  await pool.remote.ping();
  const spawnToFirstReply = performance.now() - spawnStart;
  await pool.started();
  const workers = `${size} ${kind === "thread" ? "thr" : "proc"}`;
  const count = rows.length;
  // 1. CPU-bound: count the primes in 100 ranges of a million. One caller per worker takes the
  // next range as soon as its last one is done, so every worker stays busy and a call's latency
  // is its own work, not time spent queueing behind the others.
  {
    const latencies: number[] = [];
    const counts: number[] = [];
    let next = 0;
    const started = performance.now();
    await Promise.all(Array.from({ length: size }, async () => {
      for (let i = next++; i < LIMIT / CHUNK; i = next++) {
        const sent = performance.now();
        counts.push(await pool.remote.countPrimes({ from: i * CHUNK, to: (i + 1) * CHUNK }));
        latencies.push(performance.now() - sent);
      }
    }));
    const seconds = (performance.now() - started) / 1000;
    const total = counts.reduce((a, b) => a + b, 0);
    if (total !== PRIMES_BELOW_1E8) throw new Error(`π(1e8) came out as ${total}`);
    rows.push({
      phase: "count primes < 1e8",
      workers,
      calls: counts.length,
      seconds,
      latencies,
      note: `π(10^8) = ${total.toLocaleString("en-US")}, ${
        (baseline.seconds / seconds).toFixed(2)
      }× the baseline's speed`,
    });
  }

  // 2. Round trips: small calls from a few concurrent callers.
  {
    const latencies: number[] = [];
    const started = performance.now();
    await Promise.all(Array.from({ length: CALLERS }, async () => {
      for (let i = 0; i < ROUND_TRIPS / CALLERS; i++) {
        const sent = performance.now();
        await pool.remote.ping();
        latencies.push(performance.now() - sent);
      }
    }));
    const seconds = (performance.now() - started) / 1000;
    const note = `${CALLERS} callers, one call each at a time`;
    rows.push({ phase: "ping", workers, calls: ROUND_TRIPS, seconds, latencies, note });
  }

  // 3. A stream: one worker sends every prime below 10 million, in batches.
  {
    const latencies: number[] = [];
    const started = performance.now();
    let items = 0;
    let last = started;
    for await (const batch of pool.remote.primes({ from: 0, to: 10_000_000 })) {
      items += batch.length;
      const now = performance.now();
      latencies.push(now - last);
      last = now;
    }
    const seconds = (performance.now() - started) / 1000;
    const rate = Math.round(items / seconds).toLocaleString("en-US");
    const note = `${items.toLocaleString("en-US")} primes, ${rate} items/s`;
    rows.push({
      phase: "stream primes < 1e7",
      workers: `1 ${kind === "thread" ? "thr" : "proc"}`,
      calls: 1,
      seconds,
      latencies,
      note,
    });
  }
  const stats = pool.stats;
  return { kind, spawnToFirstReply, seconds: rows[count].seconds, stats };
}

function kind(run: PoolRun): string {
  return run.kind === "thread" ? "thread workers" : "worker processes";
}

function printTable(rows: Row[]): void {
  const header = ["phase", "workers", "calls", "calls/s", "p50", "p99", "notes"];
  const lines = rows.map((row) => {
    const sorted = row.latencies.toSorted((a, b) => a - b);
    const rate = row.calls / row.seconds;
    return [
      row.phase,
      row.workers,
      String(row.calls),
      rate >= 100 ? Math.round(rate).toLocaleString("en-US") : rate.toFixed(1),
      ms(percentile(sorted, 0.5)),
      ms(percentile(sorted, 0.99)),
      row.note,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((line) => line[i].length)));
  const format = (cells: string[]) =>
    cells.map((cell, i) =>
      i === 0 || i === cells.length - 1 ? cell.padEnd(widths[i]) : cell.padStart(widths[i])
    )
      .join("  ").trimEnd();
  console.log(format(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const line of lines) console.log(format(line));
  console.log("(p50/p99: per call; for the stream, between batches)");
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

function ms(value: number): string {
  return value >= 10
    ? `${value.toFixed(0)} ms`
    : value >= 1
    ? `${value.toFixed(1)} ms`
    : `${(value * 1000).toFixed(0)} µs`;
}

function flag(name: string): string | undefined {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : undefined;
}
