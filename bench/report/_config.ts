// How much the report measures: the full run behind the committed report, and --quick, which
// exercises every code path once in well under two minutes (CI runs it; its figures mean
// little).

import type { CodecName, TransportName } from "./_bench_api.ts";
import { PAYLOAD_NAMES } from "./_payloads.ts";

/** The full run: about 13 minutes on a 2-core machine. */
export const FULL = {
  mode: "full" as "full" | "quick",
  /** Runs per cell; each cell reports the median with min–max. */
  runs: 3,
  transports: ["stdio", "unix", "tcp"] as TransportName[],
  /** The codecs of the sequential and small-message cells. */
  codecs: ["json", "msgpack", "protobuf", "raw"] as CodecName[],
  /** Payloads of the sequential cells, `small` first. */
  payloads: [...PAYLOAD_NAMES] as string[],
  /** Time per sequential cell per run, in ms; sample counts follow from it. */
  sampleBudgetMs: 500,
  /** Fewest samples per sequential cell per run (a p50 needs 20). */
  minSamples: 20,
  /** Fewest samples for payloads of 5 MB and more, whose calls take up to seconds. */
  largeMinSamples: 5,
  /** Most samples per sequential cell per run (a p99.9 needs 10,000). */
  maxSamples: 10_000,
  /** Samples per run for the `small` payload, whatever the budget. */
  smallSamples: 10_000,
  /** Warm-up before each cell, in ms (also the estimate that sets the sample count). */
  warmupMs: 100,
  /** In-flight levels for small calls, and how many calls each level makes. */
  inFlight: [[1, 3_000], [16, 10_000], [256, 30_000]] as Array<[inFlight: number, calls: number]>,
  /** One-way messages per run, and how many are sent between acknowledgements. */
  notes: 400_000,
  noteWindow: 8192,
  /** Bytes per stream, and the item sizes each is streamed in (one cell per size). */
  streamBytes: 2 ** 30,
  streamItemSizes: [64 * 1024, 1024 * 1024],
  /** Time per in-memory codec measurement (after a third as much warm-up), in ms. */
  codecBudgetMs: 150,
  /** Rounds of the Node peers section, each throughput figure's time in ms (after half of it
   * as warm-up), and the fewest warm-up calls before each row. */
  nodeRounds: 7,
  nodeBudgetMs: 400,
  nodeWarmUpOps: 1000,
  /** Rounds of the "closer to the machine" section, and its sample-count multiplier. */
  machineRounds: 7,
  machineScale: 1,
  /** Rounds of the workers section, and the MB of its stream. */
  workersRounds: 7,
  workersStreamMB: 100,
  /** Rounds of the threads section (comlink against conduit between threads). */
  threadsRounds: 7,
  /** Rounds of the tracing-on section, and its sample-count multiplier. */
  telemetryRounds: 5,
  telemetryScale: 1,
};

/** The knobs of one report run. */
export type ReportConfig = typeof FULL;

/** --quick: every code path once, small counts, one run. */
export const QUICK: ReportConfig = {
  ...FULL,
  mode: "quick",
  runs: 1,
  payloads: ["small", "1KB", "100KB"],
  sampleBudgetMs: 30,
  maxSamples: 300,
  smallSamples: 300,
  warmupMs: 20,
  inFlight: [[1, 200], [16, 1_000], [256, 2_000]],
  notes: 10_000,
  noteWindow: 2048,
  streamBytes: 16 * 1024 * 1024,
  codecBudgetMs: 10,
  nodeRounds: 1,
  nodeBudgetMs: 40,
  nodeWarmUpOps: 50,
  machineRounds: 1,
  machineScale: 0.1,
  workersRounds: 1,
  workersStreamMB: 10,
  threadsRounds: 1,
  telemetryRounds: 1,
  telemetryScale: 0.1,
};
