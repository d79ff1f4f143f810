// What tracing costs a call, and how much of it is the runtime's own: run with telemetry on
// (and an OTLP endpoint, e.g. Jaeger's, so spans are exported as in production):
//
//   OTEL_DENO=true deno bench -A bench/telemetry_bench.ts
//
// Baseline: the OpenTelemetry work of one traced call done directly against the runtime's
// providers, with no IPC in between (a client span, the trace context injected into headers and
// extracted from them, a server span in that context, both ended, two durations recorded).
// Against it: one small call over a memory pair, which with OTEL_DENO=true is traced (both
// spans, headers on the wire, metrics). Compare with the same file run without OTEL_DENO, where
// the call is untraced and the baseline does nothing (no registry).

import { openChannel } from "../channel/channel.ts";
import { otelApi, type OtelContext } from "../channel/_otel.ts";
import { memoryPair } from "../transports/memory.ts";

const SPAN_KEY = Symbol.for("OpenTelemetry Context Key SPAN");
const [a, b] = memoryPair();
const [, client] = await Promise.all([
  openChannel(b, { handlers: { echo: (value: unknown) => value } }),
  openChannel<{ echo(value: number): number }>(a),
]);

const api = otelApi();
const tracer = api?.trace.getTracer("conduit-bench");
const meter = api?.metrics?.getMeter("conduit-bench");
const clientDuration = meter?.createHistogram("bench.client", { description: "bench" });
const serverDuration = meter?.createHistogram("bench.server", { description: "bench" });
const attributes = { "rpc.system": "conduit", "rpc.method": "echo" };
const setter = { set: (c: Record<string, string>, k: string, v: string) => void (c[k] = v) };
const getter = {
  get: (c: Readonly<Record<string, string>>, k: string) => c[k],
  keys: (c: Readonly<Record<string, string>>) => Object.keys(c),
};

/** The runtime's OpenTelemetry work of one traced call, with nothing in between. */
async function runtimeOnly(value: number): Promise<number> {
  if (api === undefined || tracer === undefined) return value;
  const started = performance.now();
  const parent = api.context.active();
  const clientSpan = tracer.startSpan("echo", { kind: 2, attributes }, parent);
  const active: OtelContext = parent.setValue(SPAN_KEY, clientSpan);
  const headers: Record<string, string> = {};
  api.propagation.inject(active, headers, setter);
  const result = await api.context.with(active, async () => {
    const remote = api.propagation.extract(api.context.active(), headers, getter);
    const serverSpan = tracer.startSpan("echo", { kind: 1, attributes }, remote);
    const served = performance.now();
    const echoed = await api.context.with(remote.setValue(SPAN_KEY, serverSpan), () => value);
    serverSpan.end();
    serverDuration?.record(performance.now() - served, attributes);
    return echoed;
  });
  clientSpan.end();
  clientDuration?.record(performance.now() - started, attributes);
  return result;
}

const group = `telemetry (${api === undefined ? "off" : "on"})`;
Deno.bench({
  name: "the runtime's OTel work for one call, no IPC",
  group,
  baseline: true,
  fn: async () => void await runtimeOnly(1),
});
Deno.bench({
  name: "channel/memory small call",
  group,
  fn: async () => void await client.remote.echo(1),
});
