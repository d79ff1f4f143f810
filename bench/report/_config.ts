// How much the report measures: the full run behind the committed report, and --quick, which
// exercises every code path once in well under two minutes (CI runs it; its figures mean
// little).

import type { CodecName, TransportName } from "./_bench_api.ts";
import { PAYLOAD_NAMES } from "./_payloads.ts";

/** The knobs of one report run. */
export interface ReportConfig {
  mode: "full" | "quick";
  /** Runs per cell; each cell reports the median with min–max. */
  runs: number;
  transports: TransportName[];
  /** The codecs of the sequential and small-message cells. */
  codecs: CodecName[];
  /** Payloads of the sequential cells, `small` first. */
  payloads: string[];
  /** Time per sequential cell per run, in ms; sample counts follow from it. */
  sampleBudgetMs: number;
  /** Fewest samples per sequential cell per run (a p50 needs 20). */
  minSamples: number;
  /**
   * Fewest samples for payloads of 5 MB and more, whose calls take up to seconds (10 MB
   * through fork IPC): they report their average, and a p50 only if the budget allows 20.
   */
  largeMinSamples: number;
  /** Most samples per sequential cell per run (a p99.9 needs 10,000). */
  maxSamples: number;
  /** Samples per run for the `small` payload, whatever the budget. */
  smallSamples: number;
  /** Warm-up before each cell, in ms (also the estimate that sets the sample count). */
  warmupMs: number;
  /** In-flight levels for small calls, and how many calls each level makes. */
  inFlight: Array<[inFlight: number, calls: number]>;
  /** One-way messages per run, and how many are sent between acknowledgements. */
  notes: number;
  noteWindow: number;
  /** Bytes per stream, and the item sizes each is streamed in (one cell per size). */
  streamBytes: number;
  streamItemSizes: number[];
  /** Time per in-memory codec measurement (after a third as much warm-up), in ms. */
  codecBudgetMs: number;
  /** Rounds of the Node peers section (fresh processes per subject each), and each
   * throughput figure's measuring time in ms (after half of it as warm-up). */
  nodeRounds: number;
  nodeBudgetMs: number;
  /** The fewest calls of warm-up before each Node peers row (JIT-compiled paths need them). */
  nodeWarmUpOps: number;
  /** Rounds of the "closer to the machine" section, and its sample-count multiplier. */
  machineRounds: number;
  machineScale: number;
  /** Rounds of the workers section, and the MB of its stream. */
  workersRounds: number;
  workersStreamMB: number;
  /** Rounds of the threads section (comlink against conduit between threads). */
  threadsRounds: number;
}

const ALL_TRANSPORTS: TransportName[] = ["stdio", "unix", "tcp"];
const ALL_CODECS: CodecName[] = ["json", "msgpack", "protobuf", "raw"];

/** The full run: about 13 minutes on a 2-core machine. */
export const FULL: ReportConfig = {
  mode: "full",
  runs: 3,
  transports: ALL_TRANSPORTS,
  codecs: ALL_CODECS,
  payloads: [...PAYLOAD_NAMES],
  sampleBudgetMs: 500,
  minSamples: 20,
  largeMinSamples: 5,
  maxSamples: 10_000,
  smallSamples: 10_000,
  warmupMs: 100,
  inFlight: [[1, 3_000], [16, 10_000], [256, 30_000]],
  notes: 400_000,
  noteWindow: 8192,
  streamBytes: 2 ** 30,
  streamItemSizes: [64 * 1024, 1024 * 1024],
  codecBudgetMs: 150,
  nodeRounds: 7,
  nodeBudgetMs: 400,
  nodeWarmUpOps: 1000,
  machineRounds: 7,
  machineScale: 1,
  workersRounds: 7,
  workersStreamMB: 100,
  threadsRounds: 7,
};

/** --quick: every code path once, small counts, one run. */
export const QUICK: ReportConfig = {
  mode: "quick",
  runs: 1,
  transports: ALL_TRANSPORTS,
  codecs: ALL_CODECS,
  payloads: ["small", "1KB", "100KB"],
  sampleBudgetMs: 30,
  minSamples: 20,
  largeMinSamples: 5,
  maxSamples: 300,
  smallSamples: 300,
  warmupMs: 20,
  inFlight: [[1, 200], [16, 1_000], [256, 2_000]],
  notes: 10_000,
  noteWindow: 2048,
  streamBytes: 16 * 1024 * 1024,
  streamItemSizes: [64 * 1024, 1024 * 1024],
  codecBudgetMs: 10,
  nodeRounds: 1,
  nodeBudgetMs: 40,
  nodeWarmUpOps: 50,
  machineRounds: 1,
  machineScale: 0.1,
  workersRounds: 1,
  workersStreamMB: 10,
  threadsRounds: 1,
};
