// A pool's counters as OpenTelemetry metrics, through the runtime's meter (channel/_otel.ts):
// loaded by a pool only when the runtime traces. Each counter of the pool's `stats` becomes
// `conduit.pool.<name>` (snake case): those that go up and down (workers, queued, in flight…)
// as observable up-down counters, the running totals (completed, retried, restarts…) as
// observable counters. The meter reads them when it exports; a pool pays nothing per call.

import type { OtelApi, OtelMeter } from "../channel/_otel.ts";

/** The counters of `stats` that go up and down; every other one only grows. */
const LEVELS = new Set(["workers", "starting", "inFlight", "queued", "instances", "connections"]);

/** A pool the meter reads: its attributes, its counters, and whether it is still open. */
interface Observed {
  readonly attributes: Readonly<Record<string, string>>;
  readonly stats: () => object;
  readonly open: () => boolean;
}

const pools = new Set<Observed>();
/** The instrument of each counter name, made on first sight. */
const instruments = new Set<string>();

/**
 * Reports `stats()` of a pool with `attributes` until `open()` says it is closed.
 *
 * @param api The runtime's OpenTelemetry (its meter may be absent: then nothing is reported).
 */
export function observePool(
  api: OtelApi,
  attributes: Readonly<Record<string, string>>,
  stats: () => object,
  open: () => boolean,
): void {
  const meter = api.metrics?.getMeter("conduit");
  if (meter === undefined) return;
  const pool = { attributes, stats, open };
  pools.add(pool);
  for (const name of Object.keys(stats())) instrument(meter, name);
}

function instrument(meter: OtelMeter, name: string): void {
  if (instruments.has(name)) return;
  instruments.add(name);
  const metric = `conduit.pool.${name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`;
  const options = { description: `A pool's ${name} (its stats)` };
  const counter = LEVELS.has(name)
    ? meter.createObservableUpDownCounter(metric, options)
    : meter.createObservableCounter(metric, options);
  counter.addCallback((result) => {
    for (const pool of pools) {
      if (!pool.open()) {
        pools.delete(pool);
        continue;
      }
      const value = (pool.stats() as Record<string, unknown>)[name];
      if (typeof value === "number") result.observe(value, pool.attributes);
    }
  });
}
