// Statistics for the report: percentiles that are only claimed when there are enough samples
// to support them, and the median of several runs with its min–max spread.

/** The latency percentiles the report shows. */
export const PERCENTILES = [0.5, 0.95, 0.99, 0.999] as const;

/**
 * The fewest samples that support percentile `p`: ten samples beyond it, `10 / (1 - p)`
 * (p50: 20, p95: 200, p99: 1,000, p99.9: 10,000). With fewer, the "percentile" would be one
 * of the last few samples, i.e. the maximum under another name.
 */
export function minSamplesFor(p: number): number {
  if (!(p >= 0 && p < 1)) throw new RangeError(`A percentile must be in [0, 1), got ${p}`);
  // Rounding guards against 10 / (1 - 0.999) = 10000.000000000009.
  return Math.ceil(Math.round(10 / (1 - p) * 1e6) / 1e6);
}

/**
 * The nearest-rank percentile of ascending `sorted` samples: the smallest sample with at least
 * `p` of the samples at or below it; `undefined` when there are fewer samples than
 * {@linkcode minSamplesFor} asks.
 */
export function percentile(sorted: ArrayLike<number>, p: number): number | undefined {
  const n = sorted.length;
  if (n === 0 || n < minSamplesFor(p)) return undefined;
  const rank = Math.max(1, Math.ceil(p * n - 1e-9));
  return sorted[rank - 1];
}

/** One run's latency samples, summarised. Times in the unit of the samples. */
export interface LatencySummary {
  /** How many samples. */
  n: number;
  avg: number;
  min: number;
  max: number;
  /** Indexed like {@linkcode PERCENTILES}; `undefined` where `n` is too small. */
  percentiles: Array<number | undefined>;
}

/** Summarises one run's samples (the array is sorted in place). */
export function summarize(samples: Float64Array | number[]): LatencySummary {
  const n = samples.length;
  if (n === 0) throw new RangeError("No samples to summarize");
  const sorted = samples instanceof Float64Array ? samples.sort() : samples.sort((a, b) => a - b);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i];
  return {
    n,
    avg: sum / n,
    min: sorted[0],
    max: sorted[n - 1],
    percentiles: PERCENTILES.map((p) => percentile(sorted, p)),
  };
}

/** A figure measured in several runs: their median, lowest and highest. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  /** How many runs. */
  runs: number;
}

/**
 * The median of `values` (the mean of the middle two for an even count) with min and max;
 * `undefined` when any value is missing, so a figure is never claimed from fewer runs than
 * the others.
 */
export function spread(values: ReadonlyArray<number | undefined>): Spread | undefined {
  if (values.length === 0) return undefined;
  const known: number[] = [];
  for (const value of values) {
    if (value === undefined || !Number.isFinite(value)) return undefined;
    known.push(value);
  }
  known.sort((a, b) => a - b);
  const mid = known.length >> 1;
  const median = known.length % 2 === 1 ? known[mid] : (known[mid - 1] + known[mid]) / 2;
  return { median, min: known[0], max: known[known.length - 1], runs: known.length };
}

/** Several runs' latency summaries combined: the spread of each figure across runs. */
export interface LatencySpread {
  /** Samples per run (the smallest, if they differ). */
  n: number;
  runs: number;
  avg: Spread;
  /** Indexed like {@linkcode PERCENTILES}; `undefined` where a run had too few samples. */
  percentiles: Array<Spread | undefined>;
}

/** Combines the summaries of several runs of one cell. */
export function combineRuns(runs: readonly LatencySummary[]): LatencySpread {
  if (runs.length === 0) throw new RangeError("No runs to combine");
  return {
    n: Math.min(...runs.map((run) => run.n)),
    runs: runs.length,
    avg: spread(runs.map((run) => run.avg))!,
    percentiles: PERCENTILES.map((_, i) => spread(runs.map((run) => run.percentiles[i]))),
  };
}
