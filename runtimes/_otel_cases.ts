// OpenTelemetry on Node and Bun, registered by their runners: conduit traces through the
// OpenTelemetry API's global registry, where a program's SDK registers itself (on Deno the
// runtime does, with OTEL_DENO=true: telemetry_test.ts checks that against Jaeger). Here the
// real SDK (`@opentelemetry/sdk-trace-base` with an in-memory exporter, the AsyncLocalStorage
// context manager, the W3C propagator, a meter provider) is registered for each case and removed
// after it. `.ci/run` installs it into `.tools/otel/` (not a dependency of the package: a first
// `deno task` would fetch it); without it a case passes at once and says so.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { pathToFileURL } from "node:url";
import { type Channel, openChannel, RemoteError } from "../channel/mod.ts";
import { connectUnix, listenUnix } from "../transports/unix.ts";
import { runtimeName } from "../_runtime.ts";
import type { RuntimeCase } from "./_cases.ts";

/** Where `.ci/run` installs the SDK, and what it installs. */
const OTEL_DIR = new URL("../.tools/otel/", import.meta.url);
const OTEL_PACKAGES =
  "@opentelemetry/api@1.9.0, sdk-trace-base, sdk-metrics, context-async-hooks and core @2.12.1";

/** The SDK's packages from `.tools/otel/`, or undefined when it is not installed there. */
// deno-lint-ignore no-explicit-any
async function loadSdk(): Promise<Record<string, any> | undefined> {
  const require = createRequire(new URL("package.json", OTEL_DIR));
  const load = async (name: string) => await import(pathToFileURL(require.resolve(name)).href);
  try {
    const [api, base, hooks, core, metrics] = await Promise.all([
      load("@opentelemetry/api"),
      load("@opentelemetry/sdk-trace-base"),
      load("@opentelemetry/context-async-hooks"),
      load("@opentelemetry/core"),
      load("@opentelemetry/sdk-metrics"),
    ]);
    return { api, ...base, ...hooks, ...core, ...metrics };
  } catch {
    return undefined;
  }
}

/** What the case reads of a finished span (the SDK's `ReadableSpan`). */
interface FinishedSpan {
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status: { code: number; message?: string };
  spanContext(): { traceId: string; spanId: string };
  parentSpanContext?: { spanId: string };
}

/** The OpenTelemetry cases the Node and Bun runners register. */
export const otelCases: RuntimeCase[] = [];

const SPAN_KIND_SERVER = 1;
const SPAN_KIND_CLIENT = 2;
const STATUS_ERROR = 2;

/** What a case gets: the SDK's modules, its span exporter, a metrics collection, two channels. */
interface Traced {
  // deno-lint-ignore no-explicit-any
  sdk: Record<string, any>;
  finishedSpans(): FinishedSpan[];
  /** The metrics the SDK has now, by name: each data point's attributes and value. */
  metrics(): Promise<Map<string, { attributes: Record<string, unknown>; value: unknown }[]>>;
  calling: Channel<typeof handlers>;
}

const handlers = {
  echo: (value: number) => value,
  fail: (): never => {
    throw new RangeError("no");
  },
};

/**
 * Registers the SDK (tracer, meter, context manager, propagator), runs `body` with two channels
 * over a Unix socket, and removes the SDK after; passes at once, saying so, without the SDK.
 */
async function withSdk(body: (traced: Traced) => Promise<void>): Promise<void> {
  const sdk = await loadSdk();
  if (sdk === undefined) {
    console.warn(`skipped on ${runtimeName()}: ${OTEL_PACKAGES} is not in .tools/otel/`);
    return;
  }
  const { api } = sdk;
  const exporter = new sdk.InMemorySpanExporter();
  api.trace.setGlobalTracerProvider(
    new sdk.BasicTracerProvider({ spanProcessors: [new sdk.SimpleSpanProcessor(exporter)] }),
  );
  api.context.setGlobalContextManager(new sdk.AsyncLocalStorageContextManager().enable());
  api.propagation.setGlobalPropagator(new sdk.W3CTraceContextPropagator());
  // A reader that collects when asked, and exports nowhere.
  const reader = new (class extends sdk.MetricReader {
    protected onShutdown(): Promise<void> {
      return Promise.resolve();
    }
    protected onForceFlush(): Promise<void> {
      return Promise.resolve();
    }
  })();
  api.metrics.setGlobalMeterProvider(new sdk.MeterProvider({ readers: [reader] }));
  const dir = await mkdtemp(`${tmpdir()}/cdo`);
  try {
    const listener = await listenUnix(`${dir}/s`);
    const accepted = listener.accept();
    const client = await connectUnix(`${dir}/s`);
    const tracer = api.trace.getTracer("app");
    const [serving, calling] = await Promise.all([
      openChannel(await accepted, {
        handlers: {
          ...handlers,
          echo: (value: number) => {
            // A span the handler starts joins the caller's trace.
            tracer.startSpan("inner").end();
            return value;
          },
        },
      }),
      openChannel<typeof handlers>(client),
    ]);
    await listener.close();
    try {
      await body({
        sdk,
        calling,
        finishedSpans: () => exporter.getFinishedSpans(),
        async metrics() {
          const { resourceMetrics } = await reader.collect();
          const byName = new Map<
            string,
            { attributes: Record<string, unknown>; value: unknown }[]
          >();
          for (const scope of resourceMetrics.scopeMetrics) {
            for (const metric of scope.metrics) {
              byName.set(
                metric.descriptor.name,
                // deno-lint-ignore no-explicit-any
                metric.dataPoints.map((point: any) => ({
                  attributes: point.attributes,
                  value: point.value,
                })),
              );
            }
          }
          return byName;
        },
      });
    } finally {
      await calling.close();
      await serving.closed;
    }
  } finally {
    api.trace.disable();
    api.context.disable();
    api.propagation.disable();
    api.metrics.disable();
    await rm(dir, { recursive: true, force: true });
  }
}

otelCases.push({
  name: "opentelemetry: a call over a Unix socket is one trace, client span to server span",
  fn: () =>
    withSdk(async ({ sdk, calling, finishedSpans }) => {
      const tracer = sdk.api.trace.getTracer("app");
      await tracer.startActiveSpan("request", async (span: { end(): void }) => {
        assert.equal(await calling.remote.echo(7), 7);
        await assert.rejects(calling.remote.fail(), RemoteError);
        span.end();
      });
      const spans = finishedSpans();
      const byName = (name: string, kind?: number) =>
        spans.filter((s) => s.name === name && (kind === undefined || s.kind === kind));
      const [request] = byName("request");
      const [echoClient] = byName("echo", SPAN_KIND_CLIENT);
      const [echoServer] = byName("echo", SPAN_KIND_SERVER);
      const [inner] = byName("inner");
      const [failServer] = byName("fail", SPAN_KIND_SERVER);
      for (const span of [request, echoClient, echoServer, inner, failServer]) {
        assert.ok(span, `a span is missing: ${spans.map((s) => `${s.name}/${s.kind}`)}`);
        assert.equal(span.spanContext().traceId, request.spanContext().traceId);
      }
      assert.equal(echoClient.parentSpanContext?.spanId, request.spanContext().spanId);
      assert.equal(echoServer.parentSpanContext?.spanId, echoClient.spanContext().spanId);
      assert.equal(inner.parentSpanContext?.spanId, echoServer.spanContext().spanId);
      assert.deepEqual(echoServer.attributes, { "rpc.system": "conduit", "rpc.method": "echo" });
      assert.equal(failServer.status.code, STATUS_ERROR);
      assert.match(failServer.status.message ?? "", /no/);
    }),
});

otelCases.push({
  name: "opentelemetry: call durations, calls in flight and bytes reach the program's meter",
  // The SDK registered anew: the meter of the case before is gone, and this one must count.
  fn: () =>
    withSdk(async ({ calling, metrics }) => {
      for (let i = 0; i < 3; i++) assert.equal(await calling.remote.echo(i), i);
      await assert.rejects(calling.remote.fail(), RemoteError);
      const found = await metrics();
      const durations = found.get("rpc.client.duration") ?? [];
      const ok = durations.find((p) => p.attributes["rpc.method"] === "echo");
      assert.deepEqual(ok?.attributes, {
        "rpc.system": "conduit",
        "rpc.method": "echo",
        "rpc.status": "ok",
      });
      assert.equal((ok?.value as { count: number }).count, 3);
      const failed = durations.find((p) => p.attributes["rpc.method"] === "fail");
      assert.equal(failed?.attributes["rpc.status"], "RangeError");
      assert.ok(found.has("rpc.server.duration"), [...found.keys()].join(", "));
      const inFlight = found.get("rpc.client.in_flight") ?? [];
      assert.ok(inFlight.length > 0 && inFlight.every((p) => p.value === 0));
      const sent = found.get("conduit.channel.sent_bytes") ?? [];
      const conduit = sent.find((p) => p.attributes["rpc.system"] === "conduit");
      assert.ok((conduit?.value as number) > 0, JSON.stringify(sent));
    }),
});
