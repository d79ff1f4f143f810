/**
 * The worker module of `worker_pool_demo.ts`: CPU-bound prime counting, a prime stream, and
 * a no-op for round trips. The demo spawns it; it is not run on its own.
 *
 * @module
 */

import { serveWorker } from "@conduit/ipc/workers";

/** A half-open range of integers, `[from, to)`. */
export interface Range {
  from: number;
  to: number;
}

const handlers = {
  /** Answers at once: for round-trip timing. */
  ping: (): string => "pong",
  /** How many primes lie in the range (a segmented sieve: pure CPU). */
  countPrimes(range: Range): number {
    let count = 0;
    sieve(range, () => count++);
    return count;
  },
  /** Streams the primes of the range, in batches so each frame carries some work. */
  async *primes(range: Range): AsyncIterable<number[]> {
    const step = 1 << 16;
    for (let from = range.from; from < range.to; from += step) {
      const batch: number[] = [];
      sieve({ from, to: Math.min(range.to, from + step) }, (p) => batch.push(p));
      yield batch;
    }
  },
};

/** The API the demo calls. */
export type PrimeApi = typeof handlers;

/** Calls `found` with every prime in `[from, to)`, in order. */
function sieve({ from, to }: Range, found: (prime: number) => void): void {
  const start = Math.max(2, from);
  if (to <= start) return;
  const composite = new Uint8Array(to - start);
  for (const p of basePrimes(Math.floor(Math.sqrt(to - 1)))) {
    for (let m = Math.max(p * p, Math.ceil(start / p) * p); m < to; m += p) {
      composite[m - start] = 1;
    }
  }
  for (let i = 0; i < composite.length; i++) if (composite[i] === 0) found(start + i);
}

let base = new Uint32Array(0);
let baseLimit = 1;

/** The primes up to `limit`, cached across calls. */
function basePrimes(limit: number): Uint32Array {
  if (limit <= baseLimit) return base.subarray(0, upperBound(base, limit));
  const composite = new Uint8Array(limit + 1);
  const primes: number[] = [];
  for (let i = 2; i <= limit; i++) {
    if (composite[i]) continue;
    primes.push(i);
    for (let m = i * i; m <= limit; m += i) composite[m] = 1;
  }
  base = Uint32Array.from(primes);
  baseLimit = limit;
  return base;
}

function upperBound(sorted: Uint32Array, value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

if (import.meta.main) await serveWorker(handlers);
