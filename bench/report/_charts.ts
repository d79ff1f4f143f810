// The report's charts, from the results: throughput against payload size per codec (one chart
// per transport), small-call latency percentiles (one per transport), and small calls/s by
// the number in flight.

import { nodeRatiosChart } from "./_node_markdown.ts";
import type { ReportResults } from "./_results.ts";
import type { SubjectResult } from "./_suite.ts";
import { barChart, lineChart, type Series } from "./_svg.ts";

const PERCENTILE_LABELS = ["p50", "p95", "p99", "p99.9"];

/** File name → SVG text. */
export function renderCharts(results: ReportResults): Record<string, string> {
  const charts: Record<string, string> = {};
  const sizes = new Map(results.payloads.map((payload) => [payload.name, payload.jsonBytes]));
  const baselines = results.suite.filter((subject) =>
    subject.approach === "ndjson" || subject.approach === "fork" ||
    subject.approach === "web-worker"
  );
  for (const transport of results.config.transports) {
    const own = results.suite.filter((subject) =>
      subject.transport === transport &&
      (subject.approach === "conduit" || subject.approach === "raw-frames")
    );
    const throughput: Series[] = [...own, ...baselines].map((subject) => ({
      name: seriesName(subject),
      dashed: subject.approach !== "conduit",
      points: results.payloads.map((payload) => [
        payload.jsonBytes,
        subject.sequential[payload.name]?.mbps.median,
      ]),
    }));
    charts[`throughput_${transport}.svg`] = lineChart(throughput, {
      title: `Sequential calls over ${transport}: MB/s by payload (median of runs)`,
      xLabel: "payload (compact JSON size)",
      yLabel: "MB/s (payload both ways)",
      xTicks: results.payloads.map((payload) => [
        sizes.get(payload.name)!,
        payload.name === "small" ? `${payload.jsonBytes} B` : payload.name,
      ]),
      logX: true,
    });
    const ndjson = baselines.filter((subject) => subject.approach === "ndjson");
    const latency: Series[] = [...own, ...ndjson].map((subject) => ({
      name: seriesName(subject),
      dashed: subject.approach !== "conduit",
      points: PERCENTILE_LABELS.map((_, i) => [
        i,
        toMicros(subject.sequential.small?.latencyMs.percentiles[i]?.median),
      ]),
    }));
    charts[`latency_${transport}.svg`] = lineChart(latency, {
      title: `Small-call latency over ${transport} (${sizes.get("small")} B JSON payload)`,
      xLabel: "percentile (missing where the sample count cannot support it)",
      yLabel: "round trip, µs",
      xTicks: PERCENTILE_LABELS.map((label, i) => [i, label]),
      logX: false,
    });
  }
  const levels = results.config.inFlight.map(([level]) => String(level));
  const inFlightSubjects = [
    ...results.suite.filter((subject) =>
      subject.transport === "unix" &&
      (subject.approach === "conduit" || subject.approach === "raw-frames")
    ),
    ...baselines,
  ];
  charts["calls_in_flight.svg"] = barChart(
    inFlightSubjects.map((subject) => ({
      label: seriesName(subject),
      values: levels.map((level) => subject.callsPerSec[level]?.median),
    })),
    {
      title: "Small calls per second by calls in flight (conduit over Unix socket; baselines)",
      yLabel: "calls/s",
      bars: levels.map((level) => `${level} in flight`),
    },
  );
  const ratios = nodeRatiosChart(results.nodePeers);
  if (ratios !== undefined) charts["node_ratios.svg"] = ratios;
  return charts;
}

function seriesName(subject: SubjectResult): string {
  switch (subject.approach) {
    case "conduit":
      return `conduit ${subject.codec}`;
    case "raw-frames":
      return `raw frames (ceiling)`;
    case "ndjson":
      return "NDJSON stdio (baseline)";
    case "fork":
      return "node fork IPC";
    case "web-worker":
      return "Web Worker";
  }
}

function toMicros(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : ms * 1000;
}
