// "Threads": comlink against conduit between threads, in one run with interleaved rounds. Three
// clients of the same service in a Deno module Worker (bench/_peers.ts): comlink over
// postMessage (the baseline), a conduit channel over the Web Worker transport, and one over a
// shared ring. Rows: small-call p50 and p99 (one call at a time), calls/s with 256 in flight,
// MB/s of 1 MiB buffers moved to the worker (transferred, their length back), MB/s of the
// 1 MB structured object echoed (the report's payload; MB/s counts its compact JSON bytes).
// Each round measures every row for every client, the clients' order rotating, so a machine
// busy for a while weighs on all of them; every figure is per round, and each ratio is paired
// by round, reported as the median with min–max over the rounds. A ratio above 1 means
// faster than comlink.
//
// Run alone it prints this section; the report runs it as a fresh process for one JSON line:
//
//   deno run -A bench/report/_threads.ts [rounds=5]
//   deno run -A bench/report/_threads.ts --json <rounds>

import { THREAD_PEERS, threadPeer, type ThreadPeerKind } from "../_peers.ts";
import { loadAverage } from "./_env.ts";
import { mbps, rate, roundsLine, spreadOf, time, times } from "./_format.ts";
import { callsPerSecond, rotated, runFresh, sequential } from "./_measure.ts";
import { reportPayloads } from "./_payloads.ts";
import { type Spread, spread } from "./_stats.ts";

const SMALL_CALLS = 2_000;
const WARM_UP_CALLS = 200;
const FLIGHT_CALLS = 20_000;
const IN_FLIGHT = 256;
const MIB_CALLS = 60;
const OBJECT_CALLS = 6;

/** One client's figures, one entry per round. */
export interface ThreadsRow {
  p50Ms: number[];
  p99Ms: number[];
  callsPerSecond: number[];
  transferMBps: number[];
  objectMBps: number[];
}

/** The section's measurements. */
export interface ThreadsResult {
  rounds: number;
  /** When the section ran, and the 1-, 5- and 15-minute load averages before and after it. */
  date: string;
  load: string;
  loadAfter: string;
  rows: Record<ThreadPeerKind, ThreadsRow>;
}

/** Runs `rounds` interleaved rounds in this process. */
export async function measureThreads(
  rounds: number,
  log: (line: string) => void = () => {},
): Promise<ThreadsResult> {
  const date = new Date().toISOString();
  const load = loadAverage();
  const [small, mb] = reportPayloads(["small", "1MB"]);
  const peers = new Map(
    await Promise.all(THREAD_PEERS.map(async (kind) => [kind, await threadPeer(kind)] as const)),
  );
  const rows = Object.fromEntries(THREAD_PEERS.map((kind) => [kind, {
    p50Ms: [],
    p99Ms: [],
    callsPerSecond: [],
    transferMBps: [],
    objectMBps: [],
  }])) as unknown as Record<ThreadPeerKind, ThreadsRow>;
  /** MB/s of `calls` calls one after the other, each moving `bytes`. */
  const megabytesPerSecond = async (calls: number, bytes: number, call: () => Promise<unknown>) => {
    const start = performance.now();
    for (let i = 0; i < calls; i++) await call();
    return calls * bytes / 1e6 / ((performance.now() - start) / 1000);
  };
  try {
    for (let round = 0; round < rounds; round++) {
      log(`threads round ${round + 1}/${rounds}`);
      for (const kind of rotated(THREAD_PEERS, round)) {
        const peer = peers.get(kind)!;
        const row = rows[kind];
        const echoSmall = () => peer.echo(small.value);
        for (let i = 0; i < WARM_UP_CALLS; i++) await echoSmall();
        const [p50, , p99] = (await sequential(echoSmall, SMALL_CALLS)).percentiles;
        row.p50Ms.push(p50!);
        row.p99Ms.push(p99!);
        row.callsPerSecond.push(await callsPerSecond(echoSmall, IN_FLIGHT, FLIGHT_CALLS));
        row.transferMBps.push(
          await megabytesPerSecond(MIB_CALLS, 1 << 20, () => peer.take(new Uint8Array(1 << 20))),
        );
        row.objectMBps.push(
          await megabytesPerSecond(OBJECT_CALLS, mb.json.length, () => peer.echo(mb.value)),
        );
      }
    }
  } finally {
    for (const peer of peers.values()) await peer.close();
  }
  return { rounds, date, load, loadAfter: loadAverage(), rows };
}

/** Runs the section as a fresh process, as the report does for every section of its kind. */
export async function runThreads(
  rounds: number,
  log: (line: string) => void,
): Promise<ThreadsResult> {
  log(`threads: ${rounds} rounds`);
  return await runFresh(import.meta.filename!, ["--json", String(rounds)]);
}

/** The rows of the table: label, figure of a round, how to print it, higher is better. */
const COLUMNS = [
  ["small call p50", (row: ThreadsRow) => row.p50Ms, time, false],
  ["small call p99", (row: ThreadsRow) => row.p99Ms, time, false],
  ["calls/s, 256 in flight", (row: ThreadsRow) => row.callsPerSecond, rate, true],
  ["1 MiB transfer MB/s", (row: ThreadsRow) => row.transferMBps, mbps, true],
  ["1 MB object echo MB/s", (row: ThreadsRow) => row.objectMBps, mbps, true],
] as const;

/** The rows' labels, in the order of {@linkcode threadsRatios}'s ratios. */
export const THREAD_COLUMNS: readonly string[] = COLUMNS.map(([label]) => label);

/**
 * Each conduit client's ratios to comlink, per row (paired by round; above 1 is faster), and
 * the shared ring's small-call p50 over the Web Worker transport's.
 */
export function threadsRatios(result: ThreadsResult): {
  vsComlink: Record<"web worker" | "shared ring", Array<Spread | undefined>>;
  ringOverWorkerP50: Spread | undefined;
} {
  const base = result.rows.comlink;
  const against = (row: ThreadsRow) =>
    COLUMNS.map(([, of, , higher]) => {
      const a = of(row);
      const b = of(base);
      return spread(a.map((value, i) => higher ? value / b[i] : b[i] / value));
    });
  const ring = result.rows["shared ring"].p50Ms;
  const worker = result.rows["web worker"].p50Ms;
  return {
    vsComlink: {
      "web worker": against(result.rows["web worker"]),
      "shared ring": against(result.rows["shared ring"]),
    },
    ringOverWorkerP50: spread(ring.map((value, i) => value / worker[i])),
  };
}

/** The section's Markdown lines. */
export function threadsMarkdown(result: ThreadsResult | undefined): string[] {
  const out = ["## Threads: conduit against comlink", ""];
  if (result === undefined) return [...out, "Not measured in this run.", ""];
  const ratios = threadsRatios(result);
  out.push(
    "comlink 4.4 over `postMessage`, a conduit channel over the Web Worker transport and one " +
      "over the shared ring, to one service in a module Worker; under each figure its ratio to " +
      `comlink (above 1 is better). ${roundsLine(result)}`,
    "",
    `| client | ${COLUMNS.map(([label]) => label).join(" | ")} |`,
    `| --- | ${COLUMNS.map(() => "---").join(" | ")} |`,
  );
  for (const kind of THREAD_PEERS) {
    const row = result.rows[kind];
    const cells = COLUMNS.map(([, of, format], i) => {
      const figure = spreadOf(spread(of(row)), format);
      if (kind === "comlink") return figure;
      return `${figure}<br>${spreadOf(ratios.vsComlink[kind][i], times)}`;
    });
    out.push(`| ${kind} | ${cells.join(" | ")} |`);
  }
  out.push(
    "",
    `Shared ring p50 ÷ Web Worker transport p50, paired by round: ${
      spreadOf(ratios.ringOverWorkerP50, (x) => x.toFixed(2))
    } (target ≤ 0.33).`,
    "",
  );
  return out;
}

if (import.meta.main) {
  const json = Deno.args[0] === "--json";
  const rounds = Number(Deno.args[json ? 1 : 0] ?? 5);
  if (!(rounds >= 1)) throw new TypeError(`rounds must be at least 1, got ${Deno.args[1]}`);
  const result = await measureThreads(rounds, json ? undefined : (line) => console.error(line));
  console.log(json ? JSON.stringify(result) : threadsMarkdown(result).join("\n"));
}
