// The targets, each checked against this run's figures (same-run ratios). A target is
// met only if every case it covers meets it; the measured text lists each case.

import { percent, rate, sig, time, times } from "./_format.ts";
import type { ReportResults, TargetResult } from "./_results.ts";
import type { SubjectResult } from "./_suite.ts";

const P50 = 0;
const P99 = 2;

/** Every target with this run's figures. */
export function evaluateTargets(results: ReportResults): TargetResult[] {
  const find = (id: string): SubjectResult | undefined =>
    results.suite.find((subject) => subject.id === id);
  const codecs = results.config.codecs;
  const transports = results.config.transports;
  const targets: TargetResult[] = [];
  const add = (target: string, cases: Array<[label: string, text: string, ok: boolean]>) => {
    if (cases.length === 0) {
      targets.push({ target, measured: "– (not measured: too few samples or runs)", met: false });
      return;
    }
    targets.push({
      target,
      measured: cases.map(([label, text, ok]) => `${label} ${text}${ok ? "" : " ✗"}`).join("; "),
      met: cases.every(([, , ok]) => ok),
    });
  };
  const p = (subject: SubjectResult | undefined, payload: string, index: number) =>
    subject?.sequential[payload]?.latencyMs.percentiles[index]?.median;

  const rawUnix = find("raw-frames unix");
  const ceilingP50 = p(rawUnix, "small", P50);
  add(
    "Small call over a Unix socket: p50 ≤ 1.5× the raw-frame ping-pong p50" +
      (ceilingP50 === undefined ? "" : ` (${time(ceilingP50)})`),
    codecs.flatMap((codec) => {
      const p50 = p(find(`conduit unix ${codec}`), "small", P50);
      if (p50 === undefined || ceilingP50 === undefined) return [];
      const ratio = p50 / ceilingP50;
      return [[codec, `${time(p50)} = ${times(ratio)}`, ratio <= 1.5]];
    }),
  );
  add(
    "Small call over a Unix socket: p99 ≤ 4× its own p50",
    codecs.flatMap((codec) => {
      const subject = find(`conduit unix ${codec}`);
      const p50 = p(subject, "small", P50);
      const p99 = p(subject, "small", P99);
      if (p50 === undefined || p99 === undefined) return [];
      return [[codec, `p99 ${time(p99)} = ${times(p99 / p50)} p50`, p99 / p50 <= 4]];
    }),
  );
  add(
    "≥ 200k small calls/s with 256 in flight over a Unix socket",
    codecs.flatMap((codec) => {
      const value = find(`conduit unix ${codec}`)?.callsPerSec["256"]?.median;
      // Each call runs the codec's round trip once in each process: that bounds the rate.
      const bound = results.codecSpeed[codec]?.small?.roundTripsPerSec.median;
      const note = bound === undefined || codec === "raw"
        ? ""
        : ` (the codec's own round trip: ${rate(bound)}/s)`;
      return value === undefined ? [] : [[codec, `${rate(value)}/s${note}`, value >= 200_000]];
    }),
  );
  add(
    "≥ 1M one-way 64 B notifications/s with the raw codec",
    transports.flatMap((transport) => {
      const value = find(`conduit ${transport} raw`)?.notesPerSec.median;
      return value === undefined ? [] : [[transport, `${rate(value)}/s`, value >= 1_000_000]];
    }),
  );
  const msgpackEncode = results.codecSpeed.msgpack?.small?.encodesPerSec.median;
  add(
    "msgpack notifications ≥ 70% of the codec's in-memory encode rate" +
      (msgpackEncode === undefined ? "" : ` (${rate(msgpackEncode)}/s)`),
    transports.flatMap((transport) => {
      const value = find(`conduit ${transport} msgpack`)?.notesPerSec.median;
      if (value === undefined || msgpackEncode === undefined) return [];
      const ratio = value / msgpackEncode;
      return [[transport, `${rate(value)}/s = ${percent(ratio)}`, ratio >= 0.7]];
    }),
  );
  add(
    "Raw-codec 1 MB calls ≥ 60% of the raw-frame ceiling of the same transport",
    transports.flatMap((transport) => {
      const call = find(`conduit ${transport} raw`)?.sequential["1MB"]?.mbps.median;
      const ceiling = find(`raw-frames ${transport}`)?.sequential["1MB"]?.mbps.median;
      if (call === undefined || ceiling === undefined) return [];
      return [[
        transport,
        `${sig(call)} of ${sig(ceiling)} MB/s = ${percent(call / ceiling)}`,
        call / ceiling >= 0.6,
      ]];
    }),
  );
  add(
    "JSON / msgpack 1 MB calls ≥ 80% of the same codec's in-memory round-trip speed",
    ["json", "msgpack"].flatMap((codec) => {
      const memory = results.codecSpeed[codec]?.["1MB"]?.roundTripMBps.median;
      return transports.flatMap((transport): Array<[string, string, boolean]> => {
        const call = find(`conduit ${transport} ${codec}`)?.sequential["1MB"]?.mbps.median;
        if (call === undefined || memory === undefined) return [];
        return [[
          `${codec}/${transport}`,
          `${sig(call)} of ${sig(memory)} MB/s = ${percent(call / memory)}`,
          call / memory >= 0.8,
        ]];
      });
    }),
  );
  add(
    "Spawn-to-first-reply ≤ 150 ms",
    transports.flatMap((transport) =>
      codecs.flatMap((codec): Array<[string, string, boolean]> => {
        const value = find(`conduit ${transport} ${codec}`)?.spawnMs.median;
        return value === undefined ? [] : [[`${transport}/${codec}`, time(value), value <= 150]];
      })
    ),
  );
  const gib = results.config.streamItems * results.config.streamItemBytes / 2 ** 30;
  add(
    `A ${sig(gib)} GiB stream with peak RSS growth ≤ 64 MiB (parent / peer)`,
    results.streams.filter((cell) => cell.approach === "conduit").map((cell) => {
      const parent = cell.parentGrowthMiB.max;
      const child = cell.childGrowthMiB.max;
      return [
        cell.transport,
        `${sig(parent)} / ${sig(child)} MiB (worst run)`,
        parent <= 64 && child <= 64,
      ];
    }),
  );
  return targets;
}
