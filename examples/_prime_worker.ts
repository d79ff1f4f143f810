/**
 * The worker module of `worker_pool_demo.ts`: CPU-bound prime counting, a prime stream, and
 * a no-op for round trips. The demo spawns it; it is not run on its own.
 *
 * @module
 */

import { serveWorker } from "@conduit/ipc/workers/serve";
import { countPrimes, type Range, sieve } from "./_primes.ts";

export type { Range };

const handlers = {
  /** Answers at once: for round-trip timing. */
  ping: (): string => "pong",
  /** How many primes lie in the range (a segmented sieve: pure CPU). */
  countPrimes: (range: Range): number => countPrimes(range),
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

if (import.meta.main) await serveWorker(handlers);
