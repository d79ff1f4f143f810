import assert from "node:assert/strict";
import {
  combineRuns,
  minSamplesFor,
  percentile,
  PERCENTILES,
  spread,
  summarize,
} from "./_stats.ts";

Deno.test("minSamplesFor asks for ten samples beyond the percentile", () => {
  assert.deepEqual(PERCENTILES.map(minSamplesFor), [20, 200, 1000, 10000]);
  assert.equal(minSamplesFor(0), 10);
  assert.throws(() => minSamplesFor(1), RangeError);
  assert.throws(() => minSamplesFor(-0.1), RangeError);
  assert.throws(() => minSamplesFor(Number.NaN), RangeError);
});

Deno.test("percentile is nearest-rank and refuses to guess from too few samples", () => {
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(percentile(hundred, 0.5), 50);
  assert.equal(percentile(hundred, 0.95), undefined); // needs 200
  const thousand = Array.from({ length: 1000 }, (_, i) => i + 1);
  assert.equal(percentile(thousand, 0.5), 500);
  assert.equal(percentile(thousand, 0.95), 950);
  assert.equal(percentile(thousand, 0.99), 990);
  assert.equal(percentile(thousand, 0.999), undefined); // needs 10,000
  const tenThousand = Array.from({ length: 10_000 }, (_, i) => i + 1);
  assert.equal(percentile(tenThousand, 0.999), 9990);
  assert.equal(percentile([], 0.5), undefined);
  assert.equal(percentile(Array(19).fill(1), 0.5), undefined);
  assert.equal(percentile(Array(20).fill(1), 0.5), 1);
});

Deno.test("summarize sorts, averages and marks the percentiles it cannot support", () => {
  const samples = new Float64Array(250);
  for (let i = 0; i < samples.length; i++) samples[i] = (i * 7919) % 250; // 0..249, shuffled
  const summary = summarize(samples);
  assert.equal(summary.n, 250);
  assert.equal(summary.min, 0);
  assert.equal(summary.max, 249);
  assert.equal(summary.avg, 124.5);
  assert.deepEqual(summary.percentiles, [124, 237, undefined, undefined]);
  assert.deepEqual(summarize([3, 1, 2]).percentiles, [undefined, undefined, undefined, undefined]);
  assert.throws(() => summarize([]), RangeError);
});

Deno.test("spread gives the median with min and max, and nothing if a run is missing", () => {
  assert.deepEqual(spread([3, 1, 2]), { median: 2, min: 1, max: 3, runs: 3 });
  assert.deepEqual(spread([4, 1, 2, 3]), { median: 2.5, min: 1, max: 4, runs: 4 });
  assert.equal(spread([1, undefined, 3]), undefined);
  assert.equal(spread([1, Number.NaN, 3]), undefined);
  assert.equal(spread([]), undefined);
});

Deno.test("combineRuns takes each figure's spread across runs", () => {
  const run = (offset: number, n: number) =>
    summarize(Array.from({ length: n }, (_, i) => i + offset));
  const combined = combineRuns([run(0, 1000), run(10, 1000), run(5, 200)]);
  assert.equal(combined.n, 200);
  assert.equal(combined.runs, 3);
  assert.deepEqual(combined.percentiles[0], { median: 499, min: 104, max: 509, runs: 3 });
  // The 200-sample run supports p95 but not p99, so p99 is not claimed for the cell.
  assert.ok(combined.percentiles[1] !== undefined);
  assert.equal(combined.percentiles[2], undefined);
  assert.equal(combined.percentiles[3], undefined);
  assert.throws(() => combineRuns([]), RangeError);
});
