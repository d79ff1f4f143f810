// Test helper: a fake clock for long timers (days), so that a test can check what a runtime
// does with a timer past its cap (2^31 - 1 ms fires at once, or early) without waiting for it.

import assert from "node:assert/strict";
import { MAX_TIMER_DELAY } from "./_runtime.ts";

/** Timers this long are kept by the fake clock, shorter ones run for real. */
const LONG = 3_600_000;
/** A day, in ms. */
export const DAY = 86_400_000;

/** The fake clock {@linkcode fakeLongClock} installs. */
export interface LongClock {
  /** Moves the clock by `ms` and fires the long timers it passes. */
  advance(ms: number): void;
  /** How many long timers are pending. */
  readonly pending: number;
  /** Puts the runtime's timers and clock back. */
  restore(): void;
}

/**
 * A fake clock for long timers: `performance.now()` is moved by `advance`, and a timer of
 * `LONG` or more fires only when the clock passes it, as a runtime fires it, capped or not.
 * A timer past the cap fails the test: a runtime would fire it at once.
 */
export function fakeLongClock(): LongClock {
  const global = globalThis as unknown as {
    setTimeout(fire: (...args: unknown[]) => void, delay?: number, ...args: unknown[]): unknown;
    clearTimeout(id?: unknown): void;
  };
  const realSet = global.setTimeout;
  const realClear = global.clearTimeout;
  const realNow = performance.now.bind(performance);
  let skew = 0;
  let nextId = 1e9;
  const timers = new Map<unknown, { fire: () => void; at: number }>();
  const now = () => realNow() + skew;
  global.setTimeout = (fire, delay = 0, ...args) => {
    if (delay < LONG) return realSet(fire, delay, ...args);
    assert.ok(delay <= MAX_TIMER_DELAY, `a timer of ${delay} ms`);
    const id = nextId++;
    timers.set(id, { fire: () => fire(...args), at: now() + delay });
    return id;
  };
  global.clearTimeout = (id) => {
    if (!timers.delete(id)) realClear(id);
  };
  Object.defineProperty(performance, "now", { value: now, configurable: true, writable: true });
  return {
    advance(ms: number): void {
      skew += ms;
      for (const [id, timer] of [...timers]) {
        if (timer.at > now()) continue;
        timers.delete(id);
        timer.fire();
      }
    },
    get pending(): number {
      return timers.size;
    },
    restore(): void {
      global.setTimeout = realSet;
      global.clearTimeout = realClear;
      delete (performance as { now?: unknown }).now;
    },
  };
}
