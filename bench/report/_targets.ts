// The targets, each checked against this run's figures. Ratios are paired by run: the
// ratio of run k's figure to run k's reference (measured minutes apart at most, in the same
// pass over the subjects), then the median of those ratios, so a load swing between runs
// does not land on one side of a ratio only. A target is met only if every case it covers
// meets it; the measured text lists each case.

import { bytes, percent1, rate, sig, spreadOf, time, times } from "./_format.ts";
import { NODE_TARGET, NODE_TARGET_ROWS, PLACEMENTS } from "./_node_rows.ts";
import type { ReportResults, TargetResult } from "./_results.ts";
import { type Spread, spread } from "./_stats.ts";
import type { SubjectResult, SubjectRun } from "./_suite.ts";
import { THREAD_COLUMNS, threadsRatios } from "./_threads.ts";

const P50 = 0;
const P99 = 2;

type Case = [label: string, text: string, ok: boolean];

/** Every target with this run's figures. */
export function evaluateTargets(results: ReportResults): TargetResult[] {
  const find = (id: string): SubjectResult | undefined =>
    results.suite.find((subject) => subject.id === id);
  const codecs = results.config.codecs;
  const transports = results.config.transports;
  const targets: TargetResult[] = [];
  /** Adds a target over its cases (those not measured are left out). */
  const add = (target: string, measured: Array<Case | undefined>) => {
    const cases = measured.filter((item) => item !== undefined);
    targets.push({
      target,
      measured: cases.length === 0
        ? "– (not measured: too few samples or runs)"
        : cases.map(([label, text, ok]) => `${label} ${text}${ok ? "" : " ✗"}`).join("; "),
      met: cases.length > 0 && cases.every(([, , ok]) => ok),
    });
  };
  /** Per-run ratios of two subjects' figures, paired by run. */
  const paired = (
    subject: SubjectResult | undefined,
    reference: SubjectResult | undefined,
    figure: (run: SubjectRun) => number | undefined,
  ): Spread | undefined => {
    if (subject === undefined || reference === undefined) return undefined;
    return spread(subject.runs.map((run, k) => {
      const a = figure(run);
      const b = reference.runs[k] === undefined ? undefined : figure(reference.runs[k]);
      return a === undefined || b === undefined ? undefined : a / b;
    }));
  };
  const p50 = (run: SubjectRun) => run.sequential.small?.percentiles[P50];
  const mbps1MB = (run: SubjectRun) => {
    const summary = run.sequential["1MB"];
    const bytes = results.payloads.find((payload) => payload.name === "1MB")?.jsonBytes;
    return summary && bytes ? 2 * bytes / 1e6 / (summary.avg / 1000) : undefined;
  };

  const rawUnix = find("raw-frames unix");
  const ceilingP50 = rawUnix?.sequential.small?.latencyMs.percentiles[P50]?.median;
  add(
    "Small call over a Unix socket: p50 ≤ 1.5× the raw-frame ping-pong p50" +
      (ceilingP50 === undefined ? "" : ` (${time(ceilingP50)})`),
    codecs.flatMap((codec): Case[] => {
      const subject = find(`conduit unix ${codec}`);
      const ratio = paired(subject, rawUnix, p50);
      const own = subject?.sequential.small?.latencyMs.percentiles[P50]?.median;
      if (ratio === undefined || own === undefined) return [];
      return [[codec, `${time(own)} = ${spreadOf(ratio, times)}`, ratio.median <= 1.5]];
    }),
  );
  const tail = (subject: SubjectResult | undefined): Spread | undefined =>
    subject && spread(subject.runs.map((run) => {
      const [a, b] = [run.sequential.small?.percentiles[P99], p50(run)];
      return a === undefined || b === undefined ? undefined : a / b;
    }));
  // The host's own tail: the same ratio for raw frames, with no codec or protocol.
  const rawTail = tail(find("raw-frames unix"));
  add(
    "Small call over a Unix socket: p99 ≤ 4× its own p50" +
      (rawTail ? ` (raw frames: p99 = ${spreadOf(rawTail, times)} p50)` : ""),
    codecs.flatMap((codec): Case[] => {
      const subject = find(`conduit unix ${codec}`);
      const ratio = tail(subject);
      const p99 = subject?.sequential.small?.latencyMs.percentiles[P99]?.median;
      if (!ratio || p99 === undefined) return [];
      return [[codec, `p99 ${time(p99)} = ${spreadOf(ratio, times)} p50`, ratio.median <= 4]];
    }),
  );
  add(
    "≥ 200k small calls/s with 256 in flight over a Unix socket",
    codecs.flatMap((codec): Case[] => {
      const value = find(`conduit unix ${codec}`)?.callsPerSec["256"]?.median;
      // Each call runs the codec's round trip once in each process: that bounds the rate.
      const bound = results.codecSpeed[codec]?.small?.roundTripsPerSec.median;
      const note = bound === undefined ? "" : ` (the codec's own round trip: ${rate(bound)}/s)`;
      return value === undefined ? [] : [[codec, `${rate(value)}/s${note}`, value >= 200_000]];
    }),
  );
  add(
    "≥ 1M one-way 64 B notifications/s with the raw codec",
    transports.flatMap((transport): Case[] => {
      const value = find(`conduit ${transport} raw`)?.notesPerSec.median;
      return value === undefined ? [] : [[transport, `${rate(value)}/s`, value >= 1_000_000]];
    }),
  );
  const msgpackSmall = results.codecSpeed.msgpack?.small;
  add(
    "msgpack notifications ≥ 70% of the codec's in-memory encode rate" +
      (msgpackSmall === undefined ? "" : ` (${rate(msgpackSmall.encodesPerSec.median)}/s)`),
    transports.flatMap((transport): Case[] => {
      const subject = find(`conduit ${transport} msgpack`);
      if (subject === undefined || msgpackSmall === undefined) return [];
      const ratio = spread(subject.runs.map((run, k) => {
        const encodes = msgpackSmall.perRun.encodesPerSec[k];
        return encodes === undefined ? undefined : run.notesPerSec / encodes;
      }));
      if (ratio === undefined) return [];
      const text = `${rate(subject.notesPerSec.median)}/s = ${spreadOf(ratio, percent1)}`;
      return [[transport, text, ratio.median >= 0.7]];
    }),
  );
  add(
    "Raw-codec 1 MB calls ≥ 60% of the raw-frame ceiling of the same transport",
    transports.flatMap((transport): Case[] => {
      const subject = find(`conduit ${transport} raw`);
      const ceiling = find(`raw-frames ${transport}`);
      const ratio = paired(subject, ceiling, mbps1MB);
      const call = subject?.sequential["1MB"]?.mbps.median;
      const top = ceiling?.sequential["1MB"]?.mbps.median;
      if (ratio === undefined || call === undefined || top === undefined) return [];
      const text = `${sig(call)} of ${sig(top)} MB/s = ${spreadOf(ratio, percent1)}`;
      return [[transport, text, ratio.median >= 0.6]];
    }),
  );
  add(
    "JSON / msgpack 1 MB calls ≥ 80% of the same codec's in-memory round-trip speed",
    ["json", "msgpack"].flatMap((codec) => {
      const memory = results.codecSpeed[codec]?.["1MB"];
      return transports.flatMap((transport): Case[] => {
        const subject = find(`conduit ${transport} ${codec}`);
        if (subject === undefined || memory === undefined) return [];
        const ratio = spread(subject.runs.map((run, k) => {
          const call = mbps1MB(run);
          const own = memory.perRun.roundTripMBps[k];
          return call === undefined || own === undefined ? undefined : call / own;
        }));
        if (ratio === undefined) return [];
        const [call, own] = [subject.sequential["1MB"].mbps, memory.roundTripMBps];
        const text = `${sig(call.median)} of ${sig(own.median)} MB/s = ${
          spreadOf(ratio, percent1)
        }`;
        return [[`${codec}/${transport}`, text, ratio.median >= 0.8]];
      });
    }),
  );
  add(
    "Spawn-to-first-reply ≤ 150 ms",
    transports.flatMap((transport) =>
      codecs.flatMap((codec): Case[] => {
        const value = find(`conduit ${transport} ${codec}`)?.spawnMs.median;
        return value === undefined ? [] : [[`${transport}/${codec}`, time(value), value <= 150]];
      })
    ),
  );
  const gib = results.config.streamBytes / 2 ** 30;
  add(
    `A ${sig(gib)} GiB stream with peak RSS growth ≤ 64 MiB (driver / peer, worst run)`,
    results.streams.filter((cell) => cell.approach !== "raw-frames").map((cell): Case => {
      const [driver, peer] = [cell.parentGrowthMiB.max, cell.childGrowthMiB.max];
      const recycled = cell.approach === "conduit-recycle" ? ", recycled" : "";
      const label = `${cell.transport}, ${bytes(cell.itemBytes)} items${recycled}`;
      return [label, `${sig(driver)} / ${sig(peer)} MiB`, driver <= 64 && peer <= 64];
    }),
  );
  const node = results.nodePeers;
  if (node !== undefined && !("missing" in node.node)) {
    for (const [row, name] of NODE_TARGET_ROWS) {
      add(
        `${name} ≥ ${times(NODE_TARGET)} the best Node fork mode`,
        PLACEMENTS.flatMap((placement) =>
          Object.entries(node.ratios[placement] ?? {}).flatMap(([subject, rows]): Case[] => {
            const ratio = rows[row];
            if (ratio === undefined) return [];
            const where = subject.replace("conduit ", "") +
              (placement === "pinned" ? " 1 CPU" : "");
            return [[where, spreadOf(ratio, times), ratio.median >= NODE_TARGET]];
          })
        ),
      );
    }
  }
  const machine = results.machine;
  if (machine?.bulkRatio !== undefined && machine.smallRatio !== undefined) {
    add("Raw 1 MiB calls over a Unix socket ≥ 60% of a bare Deno socket stream (bytes moved)", [
      ["ratio", spreadOf(machine.bulkRatio, times), machine.bulkRatio.median >= 0.6],
    ]);
    add("Small raw calls p50 ≤ 1.3× a bare Deno ping-pong over a Unix socket", [
      ["ratio", spreadOf(machine.smallRatio, times), machine.smallRatio.median <= 1.3],
    ]);
  }
  const workers = results.workers;
  if (workers?.repeatedRatio !== undefined && workers.streamRatio !== undefined) {
    add("Worker spawn → first reply ≤ 2× a bare Deno child's first byte (repeated spawns)", [
      ["ratio", spreadOf(workers.repeatedRatio, times), workers.repeatedRatio.median <= 2],
    ]);
    const seconds = spread(workers.worker.streamSeconds)!;
    const full = seconds.median * 100 / workers.streamMB;
    add("100 MB of Uint8Array chunks from a worker with default options ≤ 1 s", [
      [`${workers.streamMB} MB`, spreadOf(seconds, (x) => time(x * 1000)), full <= 1],
    ]);
  }
  const threads = results.threads;
  if (threads !== undefined) {
    const ratios = threadsRatios(threads);
    for (const kind of ["web worker", "shared ring"] as const) {
      add(
        `Threads, ${kind === "web worker" ? "Web Worker transport" : "shared ring"}: ≥ 1.2× ` +
          "comlink on every row",
        THREAD_COLUMNS.flatMap((label, i) => {
          const ratio = ratios.vsComlink[kind][i];
          return ratio === undefined ? [] : [[label, spreadOf(ratio, times), ratio.median >= 1.2]];
        }),
      );
    }
    const ring = ratios.ringOverWorkerP50;
    add(
      "Threads: the shared ring's small-call p50 ≤ ⅓ of the Web Worker transport's",
      ring === undefined
        ? []
        : [["ratio", spreadOf(ring, (x) => x.toFixed(2)), ring.median <= 1 / 3]],
    );
  }
  const telemetry = results.telemetry;
  if (telemetry?.p50Ratio !== undefined && telemetry.callsRatio !== undefined) {
    add("Tracing on and exporting: small-call p50 and calls/s (256 in flight) ≥ 0.85× off", [
      ["p50", spreadOf(telemetry.p50Ratio, times), telemetry.p50Ratio.median >= 0.85],
      ["calls/s", spreadOf(telemetry.callsRatio, times), telemetry.callsRatio.median >= 0.85],
    ]);
  }
  return targets;
}
