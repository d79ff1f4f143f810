/**
 * Prime sieving for the worker pool demo: plain functions with no conduit in them, imported by
 * the worker module (`_prime_worker.ts`) and by the demo itself, which times the same work in
 * its own process first so the pool's speed-up shows.
 *
 * @module
 */

/** A half-open range of integers, `[from, to)`. */
export interface Range {
  from: number;
  to: number;
}

/** How many primes lie in the range (a segmented sieve: pure CPU). */
export function countPrimes(range: Range): number {
  let count = 0;
  sieve(range, () => count++);
  return count;
}

/** Calls `found` with every prime in `[from, to)`, in order. */
export function sieve({ from, to }: Range, found: (prime: number) => void): void {
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
