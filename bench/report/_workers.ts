// "Workers": what a user of spawnWorker meets first, against a bare Deno child in the same run.
// - spawn: spawnWorker with default options until the first reply against a bare `deno eval`
//   child until its first byte on stdout (both in bench/_peers.ts); a
//   fresh parent process's first spawn, then the median of the spawns after it;
// - stream: 100 MB of 64 KiB Uint8Array chunks streamed from a worker with default options
//   (bench/_stream_100mb_worker.ts) against a bare Deno child writing the same bytes to its
//   stdout, read to the end by the parent: the pipe's own ceiling.
// Each round runs every case as a fresh process (this module run as a program), in a rotating
// order; ratios are paired by round.
//
//   deno run -A bench/report/_workers.ts <case> <MB>    prints one JSON line

import { spawnWorker } from "../../workers/mod.ts";
import { bareFirstByte, workerFirstReply } from "../_peers.ts";
import type { StreamApi } from "../_stream_100mb_worker.ts";
import { loadAverage } from "./_env.ts";
import { roundsLine, spreadOf, time, times } from "./_format.ts";
import { freshRounds } from "./_measure.ts";
import { type Spread, spread } from "./_stats.ts";

const CASES = ["worker-spawn", "bare-spawn", "worker-stream", "bare-stream"] as const;
type Case = typeof CASES[number];
/** Spawns after the first one in a spawn case; their median is the "repeated" figure. */
const REPEATED_SPAWNS = 5;
const CHUNK_BYTES = 64 * 1024;
const MB = 1_000_000;

/** What one spawn case process measured, in ms. */
interface SpawnFigures {
  first: number;
  repeated: number;
}

/** Per round, the figures of each case; and the paired ratios. */
export interface WorkersResult {
  rounds: number;
  /** When the section ran, and the 1-, 5- and 15-minute load averages before it. */
  date: string;
  load: string;
  /** MB per stream (100 in the full run). */
  streamMB: number;
  worker: { first: number[]; repeated: number[]; streamSeconds: number[] };
  bare: { first: number[]; repeated: number[]; streamSeconds: number[] };
  /** worker ÷ bare, per round: repeated spawns (target ≤ 2), first spawns, stream seconds. */
  repeatedRatio: Spread | undefined;
  firstRatio: Spread | undefined;
  streamRatio: Spread | undefined;
}

/** Runs `rounds` rounds of the four cases, each a fresh process. */
export async function runWorkers(
  rounds: number,
  streamMB: number,
  log: (line: string) => void,
): Promise<WorkersResult> {
  const date = new Date().toISOString();
  const load = loadAverage();
  const figures = await freshRounds<Case, SpawnFigures & { seconds: number }>(
    import.meta.filename!,
    CASES,
    [String(streamMB)],
    rounds,
    log,
  );
  const side = (name: "worker" | "bare") => ({
    first: figures[`${name}-spawn`].map((f) => f.first),
    repeated: figures[`${name}-spawn`].map((f) => f.repeated),
    streamSeconds: figures[`${name}-stream`].map((f) => f.seconds),
  });
  const [worker, bare] = [side("worker"), side("bare")];
  const ratio = (a: number[], b: number[]) => spread(a.map((value, i) => value / b[i]));
  return {
    rounds,
    date,
    load,
    streamMB,
    worker,
    bare,
    repeatedRatio: ratio(worker.repeated, bare.repeated),
    firstRatio: ratio(worker.first, bare.first),
    streamRatio: ratio(worker.streamSeconds, bare.streamSeconds),
  };
}

/** The section's Markdown lines. */
export function workersMarkdown(result: WorkersResult | undefined): string[] {
  const out = ["## Workers: start-up and a 100 MB stream", ""];
  if (result === undefined) return [...out, "Not measured in this run.", ""];
  const ms = (values: number[]) => spreadOf(spread(values), time);
  const s = (values: number[]) => spreadOf(spread(values), (x) => time(x * 1000));
  const { worker, bare } = result;
  out.push(
    "`spawnWorker` with default options against a bare Deno child; the repeated spawn is the " +
      `median of the ${REPEATED_SPAWNS} after a parent's first. ${roundsLine(result)}`,
    "",
    "| case | conduit worker | bare Deno child | ratio | target |",
    "| --- | --- | --- | --- | --- |",
    `| spawn → first reply, repeated | ${ms(worker.repeated)} | ${ms(bare.repeated)} | ${
      spreadOf(result.repeatedRatio, times)
    } | ≤ 2× (≤ 25 ms) |`,
    `| spawn → first reply, a fresh parent's first | ${ms(worker.first)} | ${ms(bare.first)} | ${
      spreadOf(result.firstRatio, times)
    } | ≤ 35 ms |`,
    `| ${result.streamMB} MB stream of \`Uint8Array\` | ${s(worker.streamSeconds)} | ${
      s(bare.streamSeconds)
    } | ${spreadOf(result.streamRatio, times)} | ≤ 1 s for 100 MB |`,
    "",
  );
  return out;
}

async function spawnFigures(spawn: () => Promise<number>): Promise<SpawnFigures> {
  const first = await spawn();
  const repeated: number[] = [];
  for (let i = 0; i < REPEATED_SPAWNS; i++) repeated.push(await spawn());
  return { first, repeated: repeated.sort((a, b) => a - b)[REPEATED_SPAWNS >> 1] };
}

const STREAM_WORKER = new URL("../_stream_100mb_worker.ts", import.meta.url);

/** Streams `bytes` from a worker with default options, checking every chunk; seconds. */
async function workerStream(bytes: number): Promise<number> {
  const worker = await spawnWorker<StreamApi>(STREAM_WORKER);
  const count = Math.ceil(bytes / CHUNK_BYTES);
  let received = 0;
  let index = 0;
  const start = performance.now();
  for await (const item of worker.remote.chunks({ count, bytes: CHUNK_BYTES })) {
    const byte = index++ & 0xff;
    if (!(item instanceof Uint8Array) || item[0] !== byte || item.at(-1) !== byte) {
      throw new Error(`worker stream: chunk ${index - 1} arrived changed`);
    }
    received += item.length;
  }
  const seconds = (performance.now() - start) / 1000;
  await worker.close();
  if (received !== count * CHUNK_BYTES) {
    throw new Error(`worker stream: received ${received} of ${count * CHUNK_BYTES} bytes`);
  }
  return seconds;
}

/** A bare Deno child writes `bytes` to its stdout in 64 KiB writes; we read them all. */
async function bareStream(bytes: number): Promise<number> {
  const program = `const chunk = new Uint8Array(${CHUNK_BYTES}).fill(7);
    for (let left = ${bytes}; left > 0; left -= ${CHUNK_BYTES}) {
      const part = chunk.subarray(0, Math.min(left, ${CHUNK_BYTES}));
      for (let at = 0; at < part.length;) at += Deno.stdout.writeSync(part.subarray(at));
    }`;
  const start = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", program],
    stdin: "null",
    stdout: "piped",
  }).spawn();
  let received = 0;
  for await (const chunk of child.stdout) received += chunk.length;
  const seconds = (performance.now() - start) / 1000;
  if (!(await child.status).success || received !== bytes) {
    throw new Error(`bare stream: received ${received} of ${bytes} bytes`);
  }
  return seconds;
}

const MEASURE: Record<Case, (bytes: number) => Promise<object>> = {
  "worker-spawn": () => spawnFigures(workerFirstReply),
  "bare-spawn": () => spawnFigures(bareFirstByte),
  "worker-stream": async (bytes) => ({ seconds: await workerStream(bytes) }),
  "bare-stream": async (bytes) => ({ seconds: await bareStream(bytes) }),
};

if (import.meta.main) {
  const [name, mb] = Deno.args;
  if (!CASES.includes(name as Case)) throw new TypeError(`unknown case ${name}`);
  console.log(JSON.stringify(await MEASURE[name as Case](Number(mb) * MB)));
}
