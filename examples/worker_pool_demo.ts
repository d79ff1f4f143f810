/**
 * A typed worker pool at work: counts the primes below 100 million, first in this process
 * alone (the baseline), then on a pool of two worker processes; measures round trips, streams
 * primes from a worker, then prints a table with the pool's speed-up over the baseline.
 *
 *   deno run --allow-run examples/worker_pool_demo.ts [--workers 2]
 *
 * The workers run `examples/_prime_worker.ts` with no permissions at all: the parent needs
 * `--allow-run` to start them. The speed-up needs idle cores: on a machine whose cores are
 * busy with other work, the pool may well be slower than the single process.
 *
 * @module
 */

import { WorkerPool } from "@conduit/ipc/workers";
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
  workers: number;
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
    workers: 0,
    calls: latencies.length,
    seconds,
    latencies,
    note: "single process, no workers (baseline)",
  };
  rows.push(row);
  return row;
})();

const spawnStart = performance.now();
await using pool = new WorkerPool<PrimeApi>(WORKER, { size });
await pool.remote.ping();
const spawnToFirstReply = performance.now() - spawnStart;
await pool.started();

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
    workers: size,
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
  rows.push({ phase: "ping", workers: size, calls: ROUND_TRIPS, seconds, latencies, note });
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
  rows.push({ phase: "stream primes < 1e7", workers: 1, calls: 1, seconds, latencies, note });
}

const stats = pool.stats;
await pool.close();

printTable(rows);
console.log(
  `count primes < 1e8: ${baseline.seconds.toFixed(2)} s in one process, ` +
    `${rows[1].seconds.toFixed(2)} s on ${size} workers (${
      (baseline.seconds / rows[1].seconds).toFixed(2)
    }× speed-up)`,
);
console.log(`spawn-to-first-reply: ${spawnToFirstReply.toFixed(0)} ms (${size} workers)`);
console.log(
  `pool: ${stats.completed} calls completed, ${stats.failed} failed, ` +
    `${stats.crashes} crashes, ${stats.restarts} restarts`,
);

function printTable(rows: Row[]): void {
  const header = ["phase", "workers", "calls", "calls/s", "p50", "p99", "notes"];
  const lines = rows.map((row) => {
    const sorted = row.latencies.toSorted((a, b) => a - b);
    const rate = row.calls / row.seconds;
    return [
      row.phase,
      String(row.workers),
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
