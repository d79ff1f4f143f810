// "Tracing on": a small JSON call over a Unix socket, both ends in one process, with Deno's
// OpenTelemetry off and on (`OTEL_DENO=true`, so each call is a client and a server span, the
// trace context travels in the call's headers, and durations are recorded). Traced processes
// export to a Jaeger this section starts when `.tools/jaeger` is built (`.ci/run` builds it),
// else to no exporter, which the report says. Each figure is a fresh process, in a rotating
// order: the p50 of sequential calls, calls/s with 256 in flight, and the bytes the caller
// sends per call (what the trace context adds on the wire).
//
//   deno run -A bench/report/_telemetry.ts <case> <scale>    prints one number

import { openChannel } from "../../channel/mod.ts";
import { jsonCodec } from "../../codecs/json.ts";
import type { Transport } from "../../transports/types.ts";
import { connectUnix, listenUnix } from "../../transports/unix.ts";
import { startJaeger } from "../../_test_jaeger.ts";
import { loadAverage } from "./_env.ts";
import { rate, roundsLine, sig, spreadOf, time, times } from "./_format.ts";
import { callsPerSecond, freshRounds, sequential } from "./_measure.ts";
import { type Spread, spread } from "./_stats.ts";

const CASES = [
  "off-p50",
  "on-p50",
  "off-calls256",
  "on-calls256",
  "off-bytes",
  "on-bytes",
] as const;
type Case = typeof CASES[number];
const JAEGER = new URL("../../.tools/jaeger/bin/jaeger", import.meta.url).pathname;
const SMALL = { id: 42, name: "conduit", tags: ["bench", "small", "call"] };

/** Per case, the figure of each round; the paired ratios; where traces went. */
export interface TelemetryResult {
  rounds: number;
  date: string;
  load: string;
  /** "Jaeger (OTLP/HTTP)", or why traces were not exported. */
  exporter: string;
  /** µs for p50, calls/s for calls256, bytes per call for bytes. */
  figures: Record<Case, number[]>;
  /** on ÷ off, per round, higher is better (off p50 ÷ on p50; on calls/s ÷ off calls/s). */
  p50Ratio: Spread | undefined;
  callsRatio: Spread | undefined;
}

/** Runs `rounds` rounds of the cases, each a fresh process. */
export async function runTelemetry(
  rounds: number,
  scale: number,
  log: (line: string) => void,
): Promise<TelemetryResult> {
  const date = new Date().toISOString();
  const load = loadAverage();
  await using collector = await startCollector();
  const figures = await freshRounds<Case, number>(
    import.meta.filename!,
    CASES,
    [String(scale)],
    rounds,
    log,
    (name) =>
      name.startsWith("on-")
        ? { OTEL_DENO: "true", OTEL_DENO_CONSOLE: "ignore", ...collector.env }
        : { OTEL_DENO: "false" },
  );
  const paired = (a: Case, b: Case) => spread(figures[a].map((value, i) => value / figures[b][i]));
  return {
    rounds,
    date,
    load,
    exporter: collector.name,
    figures,
    p50Ratio: paired("off-p50", "on-p50"),
    callsRatio: paired("on-calls256", "off-calls256"),
  };
}

/** The section's Markdown lines. */
export function telemetryMarkdown(result: TelemetryResult | undefined): string[] {
  const out = ["## Tracing on", ""];
  if (result === undefined) return [...out, "Not measured in this run.", ""];
  const f = result.figures;
  const us = (values: number[]) => spreadOf(spread(values), (x) => time(x / 1000));
  const perSec = (values: number[]) => spreadOf(spread(values), (x) => `${rate(x)}/s`);
  const bytes = (values: number[]) => spreadOf(spread(values), (x) => `${sig(x)} B`);
  out.push(
    "A small JSON call over a Unix socket, both ends in one process, with Deno's OpenTelemetry " +
      `off and on (\`OTEL_DENO=true\`: two spans, the trace context in the call's headers, ` +
      `durations recorded; traces exported to ${result.exporter}). ${roundsLine(result)}`,
    "",
    "| case | off | on | on ÷ off (higher is better) | target |",
    "| --- | --- | --- | --- | --- |",
    `| small call p50 | ${us(f["off-p50"])} | ${us(f["on-p50"])} | ${
      spreadOf(result.p50Ratio, times)
    } | ≥ 0.85× |`,
    `| calls/s, 256 in flight | ${perSec(f["off-calls256"])} | ${perSec(f["on-calls256"])} | ${
      spreadOf(result.callsRatio, times)
    } | ≥ 0.85× |`,
    `| bytes the caller sends per call | ${bytes(f["off-bytes"])} | ${
      bytes(f["on-bytes"])
    } | – | – |`,
    "",
    "`OTEL_DENO=true deno bench -A bench/telemetry_bench.ts` sets the runtime's own work for one " +
      "traced call beside it (bench/report/notes.md, Tracing on).",
    "",
  );
  return out;
}

/** Jaeger (`_test_jaeger.ts`'s) when it is built, else nothing to export to. */
async function startCollector(): Promise<
  { name: string; env: Record<string, string> } & AsyncDisposable
> {
  try {
    Deno.statSync(JAEGER);
  } catch {
    return {
      name: `no exporter (${JAEGER} is not built; \`.ci/run\` builds it)`,
      env: { OTEL_TRACES_EXPORTER: "none", OTEL_METRICS_EXPORTER: "none" },
      [Symbol.asyncDispose]: () => Promise.resolve(),
    };
  }
  const jaeger = await startJaeger();
  return {
    name: "Jaeger v1.76.0 (OTLP/HTTP, in-memory storage) on this machine",
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint },
    [Symbol.asyncDispose]: () => jaeger[Symbol.asyncDispose](),
  };
}

/** `inner` with the bytes written through it counted in `count`. */
function counted(inner: Transport, count: { bytes: number }): Transport {
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      count.bytes += chunk.length;
      controller.enqueue(chunk);
    },
  });
  void counter.readable.pipeTo(inner.writable).catch(() => {});
  return {
    readable: inner.readable,
    writable: counter.writable,
    close: () => inner.close(),
    abort: (reason) => inner.abort(reason),
    [Symbol.asyncDispose]: () => inner.close(),
  };
}

async function measure(name: Case, scale: number): Promise<number> {
  const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cdt" });
  const listener = await listenUnix(`${dir}/s`);
  const [server, client] = await Promise.all([listener.accept(), connectUnix(`${dir}/s`)]);
  await listener.close();
  const sent = { bytes: 0 };
  const [serving, calling] = await Promise.all([
    openChannel(server, { codec: jsonCodec(), handlers: { echo: (value: unknown) => value } }),
    openChannel<{ echo(value: unknown): unknown }>(
      name.endsWith("-bytes") ? counted(client, sent) : client,
      { codec: jsonCodec() },
    ),
  ]);
  try {
    const echo = () => calling.remote.echo(SMALL);
    for (let i = 0; i < 2000; i++) await echo();
    if (name.endsWith("-p50")) {
      return (await sequential(echo, Math.ceil(10_000 * scale))).percentiles[0]! * 1000;
    }
    if (name.endsWith("-calls256")) {
      return await callsPerSecond(echo, 256, Math.ceil(50_000 * scale));
    }
    const calls = 1000;
    const before = sent.bytes;
    for (let i = 0; i < calls; i++) await echo();
    return (sent.bytes - before) / calls;
  } finally {
    await Promise.all([calling.close(), serving.close()]);
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  const [name, scale] = Deno.args;
  if (!CASES.includes(name as Case)) throw new TypeError(`unknown case ${name}`);
  console.log(await measure(name as Case, Number(scale ?? 1)));
}
