// Number formatting shared by the Markdown report, the charts and the targets.

import type { Spread } from "./_stats.ts";

/** A time given in ms, in µs below 1 ms, else in ms or s: `87 µs`, `1.4 ms`, `2.31 s`. */
export function time(ms: number): string {
  if (ms < 1) return `${sig(ms * 1000)} µs`;
  if (ms < 1000) return `${sig(ms)} ms`;
  return `${sig(ms / 1000)} s`;
}

/** A rate: `812`, `48.2k`, `1.21M` (per second, unit added by the caller). */
export function rate(perSec: number): string {
  if (perSec >= 999_500) return `${sig(perSec / 1e6)}M`;
  if (perSec >= 999.5) return `${sig(perSec / 1e3)}k`;
  return sig(perSec);
}

/** MB/s with three significant digits. */
export function mbps(value: number): string {
  return sig(value);
}

/** A ratio: `1.32×`. */
export function times(ratio: number): string {
  return `${ratio >= 10 ? ratio.toFixed(0) : ratio.toFixed(2)}×`;
}

/** A percentage: `64%`. */
export function percent(ratio: number): string {
  return `${(ratio * 100).toFixed(0)}%`;
}

/** A percentage with one decimal, for figures checked against a threshold: `79.6%`. */
export function percent1(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

/** A spread: the median, then min–max when there were several runs. */
export function spreadOf(value: Spread | undefined, format: (x: number) => string): string {
  if (value === undefined) return "–";
  if (value.runs < 2) return format(value.median);
  return `${format(value.median)} (${format(value.min)}–${format(value.max)})`;
}

/** Three significant digits, no exponent, thousands separated. */
export function sig(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 100) return Math.round(value).toLocaleString("en-US");
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toPrecision(2);
}

/** A byte count in binary units: `64 KiB`, `1 MiB`. */
export function bytes(value: number): string {
  if (value >= 2 ** 30) return `${sig(value / 2 ** 30)} GiB`;
  if (value >= 2 ** 20) return `${sig(value / 2 ** 20)} MiB`;
  if (value >= 1024) return `${sig(value / 1024)} KiB`;
  return `${value} B`;
}

/** The line under a section's title: how many rounds, when, and the load before. */
export function roundsLine(section: { rounds: number; date: string; load: string }): string {
  return `Median of ${section.rounds} rounds (min–max), ratios paired by round; measured ` +
    `${section.date.slice(0, 16).replace("T", " ")} UTC, load average ${section.load}.`;
}
