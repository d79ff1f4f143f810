// The main grid: every approach (conduit on each transport × codec, the raw-frame ceiling on
// each transport, NDJSON over stdio, fork IPC, a Web Worker) measured the same way. Runs are
// interleaved (run 1 of every subject, then run 2, …), and each run of each subject has a
// fresh driver process (this module run as a program) that spawns a fresh peer: a noisy
// minute on a shared machine lands in one run of many cells, not in every run of one, and no
// measurement inherits another's heap or JIT state.

import assert from "node:assert/strict";
import { type CodecName, methodCodecsFor, type TransportName } from "./_bench_api.ts";
import {
  conduitClient,
  type EchoClient,
  forkClient,
  ndjsonClient,
  RawFrameClient,
  webWorkerClient,
} from "./_clients.ts";
import type { ReportConfig } from "./_config.ts";
import {
  callsPerSecond,
  estimate,
  notesPerSecond,
  retryOnce,
  rssOf,
  runFresh,
  sequential,
} from "./_measure.ts";
import { rawNote, type ReportPayload, reportPayloads, valueFor } from "./_payloads.ts";
import { spawnPeer } from "../_peers.ts";
import {
  combineRuns,
  type LatencySpread,
  type LatencySummary,
  type Spread,
  spread,
} from "./_stats.ts";

/** The approaches compared. */
export type Approach = "conduit" | "raw-frames" | "ndjson" | "fork" | "web-worker";

/** Something to measure: how to start it and what it carries. */
export interface Subject {
  /** e.g. `conduit unix msgpack`. */
  id: string;
  approach: Approach;
  /** `stdio`, `unix`, `tcp`, `fork IPC` or `postMessage`. */
  transport: string;
  /** The encoding, as the report names it. */
  codec: string;
  /** Which form of the payloads it takes. */
  values: CodecName | "raw-frames";
  /** The one-way message's size as encoded, in bytes. */
  noteBytes: number;
  /** Spawns the peer and connects. */
  start(): Promise<EchoClient>;
}

/** What one run of one subject measured. */
export interface SubjectRun {
  /** From spawning the peer to the first answer, in ms. */
  spawnMs: number;
  /** The peer's peak RSS at the end of the run, in bytes. */
  peakRss: number | undefined;
  sequential: Record<string, LatencySummary>;
  callsPerSec: Record<string, number>;
  notesPerSec: number;
}

/** One subject's figures: each the median of its runs, with min–max. */
export interface SubjectResult extends Omit<Subject, "values" | "start"> {
  spawnMs: Spread;
  peakRssMiB: Spread | undefined;
  /** Per payload: round-trip latency (ms) and MB/s (the JSON bytes, both directions). */
  sequential: Record<string, { latencyMs: LatencySpread; mbps: Spread }>;
  /** Per in-flight level: small calls per second. */
  callsPerSec: Record<string, Spread>;
  notesPerSec: Spread;
  runs: SubjectRun[];
}

const CHILDREN = new URL("./children/", import.meta.url);
const utf8 = new TextEncoder();

/** Every subject of the grid, for `config`. */
export async function subjects(
  config: ReportConfig,
  small: ReportPayload,
  socketDir: string,
): Promise<Subject[]> {
  const list: Subject[] = [];
  const jsonNoteBytes = utf8.encode(JSON.stringify(small.value)).length;
  for (const transport of config.transports) {
    list.push(rawFrames(transport, socketDir));
    // The raw codec right after its ceiling: the closer in time, the fairer their ratio.
    const codecs = [...config.codecs].sort((a, b) => Number(b === "raw") - Number(a === "raw"));
    for (const codec of codecs) {
      const { small: smallCodec, methodCodecs } = await methodCodecsFor(codec);
      list.push({
        id: `conduit ${transport} ${codec}`,
        approach: "conduit",
        transport,
        codec,
        values: codec,
        noteBytes: smallCodec.encode(noteValue(codec, small)).length,
        start: async () =>
          await conduitClient(
            await spawnPeer(transport, new URL("conduit_peer.ts", CHILDREN), [codec], socketDir),
            methodCodecs,
          ),
      });
    }
  }
  const baseline = (
    id: string,
    approach: Approach,
    transport: string,
    codec: string,
    start: () => EchoClient,
  ): Subject => ({
    id,
    approach,
    transport,
    codec,
    values: "json",
    noteBytes: jsonNoteBytes,
    start: () => Promise.resolve(start()),
  });
  list.push(
    baseline(
      "ndjson stdio",
      "ndjson",
      "stdio",
      "JSON lines",
      () => ndjsonClient(new URL("ndjson_echo.ts", CHILDREN)),
    ),
    baseline(
      "node fork IPC",
      "fork",
      "fork IPC",
      "JSON (Node IPC)",
      () => forkClient(new URL("fork_echo.mjs", CHILDREN)),
    ),
    baseline(
      "web worker",
      "web-worker",
      "postMessage",
      "structured clone",
      () => webWorkerClient(new URL("web_worker_echo.ts", CHILDREN)),
    ),
  );
  return list;
}

function rawFrames(transport: TransportName, socketDir: string): Subject {
  return {
    id: `raw-frames ${transport}`,
    approach: "raw-frames",
    transport,
    codec: "raw frames",
    values: "raw-frames",
    noteBytes: 64,
    start: async () =>
      new RawFrameClient(
        await spawnPeer(transport, new URL("raw_frame_echo.ts", CHILDREN), [], socketDir),
      ),
  };
}

/** Starts each subject once, unmeasured, so that module caches are warm for the spawn times. */
export async function warmUp(list: readonly Subject[]): Promise<void> {
  for (const subject of list) {
    const client = await subject.start();
    await client.noted();
    await client.close();
  }
}

/**
 * Measures every subject `config.runs` times, calling `beforeRun` at the start of each run
 * (for measurements that should see the same machine load as the run).
 */
export async function runSuite(
  config: ReportConfig,
  list: readonly Subject[],
  payloads: readonly ReportPayload[],
  socketDir: string,
  log: (line: string) => void,
  beforeRun: (run: number) => Promise<void> = () => Promise.resolve(),
): Promise<SubjectResult[]> {
  const sampleCounts: Record<string, number> = {};
  const runs = new Map<string, SubjectRun[]>(list.map((subject) => [subject.id, []]));
  const small = payloads.find((payload) => payload.name === "small");
  if (small === undefined) throw new RangeError("The suite needs the small payload");
  for (let run = 0; run < config.runs; run++) {
    await beforeRun(run);
    // Rotate the order, so no subject always runs first (or last) in a run.
    const shift = Math.floor(run * list.length / config.runs);
    const order = [...list.slice(shift), ...list.slice(0, shift)];
    for (const subject of order) {
      const record = await retryOnce(
        `run ${run + 1}/${config.runs} ${subject.id}`,
        () =>
          runInDriver({
            config,
            subjectId: subject.id,
            verify: run === 0,
            sampleCounts,
            socketDir,
          }),
        log,
      );
      runs.get(subject.id)!.push(record);
      log(
        `run ${run + 1}/${config.runs} ${subject.id}: spawn ${record.spawnMs.toFixed(0)} ms, ` +
          `small avg ${(record.sequential.small.avg * 1000).toFixed(0)} µs, ` +
          `notes ${record.notesPerSec.toFixed(0)}/s`,
      );
    }
  }
  return list.map((subject) => summarizeSubject(subject, runs.get(subject.id)!, payloads));
}

/** What a driver process is asked to measure. */
interface DriverTask {
  config: ReportConfig;
  subjectId: string;
  /** Check that the first echo of each payload equals what was sent. */
  verify: boolean;
  /** Samples per `subject payload`, decided by the first run; the driver adds its own. */
  sampleCounts: Record<string, number>;
  socketDir: string;
}

/** Runs one subject once in a fresh driver process; adds its sample counts to the task's. */
async function runInDriver(task: DriverTask): Promise<SubjectRun> {
  const { record, sampleCounts } = await runFresh<{
    record: SubjectRun;
    sampleCounts: Record<string, number>;
  }>(import.meta.filename!, [JSON.stringify(task)]);
  Object.assign(task.sampleCounts, sampleCounts);
  // JSON has no undefined: percentiles that were not claimed come back as null.
  for (const summary of Object.values(record.sequential) as LatencySummary[]) {
    summary.percentiles = summary.percentiles.map((p) => p ?? undefined);
  }
  record.peakRss ??= undefined;
  return record;
}

if (import.meta.main) {
  const task: DriverTask = JSON.parse(Deno.args[0]);
  const payloads = reportPayloads(task.config.payloads);
  const small = payloads[0];
  const subject = (await subjects(task.config, small, task.socketDir))
    .find((candidate) => candidate.id === task.subjectId);
  if (subject === undefined) throw new RangeError(`No subject "${task.subjectId}"`);
  const counts = task.sampleCounts;
  const record = await runOnce(task.config, subject, payloads, small, task.verify, counts);
  console.log(JSON.stringify({ record, sampleCounts: counts }));
}

async function runOnce(
  config: ReportConfig,
  subject: Subject,
  payloads: readonly ReportPayload[],
  small: ReportPayload,
  verify: boolean,
  sampleCounts: Record<string, number>,
): Promise<SubjectRun> {
  const started = performance.now();
  const client = await subject.start();
  await client.noted();
  const spawnMs = performance.now() - started;
  const sequentialRuns: Record<string, LatencySummary> = {};
  try {
    for (const payload of payloads) {
      const value = valueFor(subject.values, payload);
      const call = payload.name === "small"
        ? () => client.echoSmall(value)
        : () => client.echo(value);
      let perCallMs: number | undefined;
      if (verify) {
        const start = performance.now();
        const echoed = await call();
        const took = performance.now() - start;
        assert.deepStrictEqual(echoed, value, `${subject.id} ${payload.name}`);
        // A call slower than the whole warm-up has warmed up by itself.
        if (took > config.warmupMs) perCallMs = took;
      }
      perCallMs ??= await estimate(call, config.warmupMs, 1);
      const key = `${subject.id} ${payload.name}`;
      let n = sampleCounts[key];
      if (n === undefined) {
        const least = payload.json.length >= 5e6 ? config.largeMinSamples : config.minSamples;
        n = payload.name === "small" ? config.smallSamples : Math.min(
          config.maxSamples,
          Math.max(least, Math.round(config.sampleBudgetMs / perCallMs)),
        );
        sampleCounts[key] = n;
      }
      sequentialRuns[payload.name] = await sequential(call, n);
    }
    const smallValue = valueFor(subject.values, small);
    const callsPerSec: Record<string, number> = {};
    for (const [inFlight, calls] of config.inFlight) {
      callsPerSec[inFlight] = await callsPerSecond(
        () => client.echoSmall(smallValue),
        inFlight,
        calls,
      );
    }
    const note = noteValue(subject.values, small);
    const notesPerSec = await notesPerSecond(client, note, config.notes, config.noteWindow);
    const peakRss = client.pid === undefined ? undefined : rssOf(client.pid)?.peak;
    return { spawnMs, peakRss, sequential: sequentialRuns, callsPerSec, notesPerSec };
  } finally {
    await client.close();
  }
}

function noteValue(values: Subject["values"], small: ReportPayload): unknown {
  return values === "raw" || values === "raw-frames" ? rawNote() : small.value;
}

function summarizeSubject(
  subject: Subject,
  runs: SubjectRun[],
  payloads: readonly ReportPayload[],
): SubjectResult {
  const sequentialResult: SubjectResult["sequential"] = {};
  for (const payload of payloads) {
    const perRun = runs.map((run) => run.sequential[payload.name]);
    sequentialResult[payload.name] = {
      latencyMs: combineRuns(perRun),
      mbps: spread(perRun.map((summary) => 2 * payload.json.length / 1e6 / (summary.avg / 1000)))!,
    };
  }
  const callsPerSec: Record<string, Spread> = {};
  for (const level of Object.keys(runs[0].callsPerSec)) {
    callsPerSec[level] = spread(runs.map((run) => run.callsPerSec[level]))!;
  }
  const peaks = runs.map((run) => run.peakRss === undefined ? undefined : run.peakRss / 2 ** 20);
  const { values: _, start: __, ...named } = subject;
  return {
    ...named,
    spawnMs: spread(runs.map((run) => run.spawnMs))!,
    peakRssMiB: spread(peaks),
    sequential: sequentialResult,
    callsPerSec,
    notesPerSec: spread(runs.map((run) => run.notesPerSec))!,
    runs,
  };
}
