// OpenTelemetry on Node and Bun, registered by their runners: conduit traces through the
// OpenTelemetry API's global registry, where a program's SDK registers itself (on Deno the
// runtime does, with OTEL_DENO=true: telemetry_test.ts checks that against Jaeger). Here the
// real SDK (`@opentelemetry/sdk-trace-base` with an in-memory exporter, the AsyncLocalStorage
// context manager, the W3C propagator) is registered for one case and removed after it. `.ci/run`
// installs it into `.tools/otel/` (not a dependency of the package: a first `deno task` would
// fetch it); without it the case passes at once and says so.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { pathToFileURL } from "node:url";
import { openChannel, RemoteError } from "../channel/mod.ts";
import { connectUnix, listenUnix } from "../transports/unix.ts";
import { runtimeName } from "../_runtime.ts";
import type { RuntimeCase } from "./_cases.ts";

/** Where `.ci/run` installs the SDK, and what it installs. */
const OTEL_DIR = new URL("../.tools/otel/", import.meta.url);
const OTEL_PACKAGES =
  "@opentelemetry/api@1.9.0, sdk-trace-base, context-async-hooks and core @2.12.1";

/** The SDK's packages from `.tools/otel/`, or undefined when it is not installed there. */
// deno-lint-ignore no-explicit-any
async function loadSdk(): Promise<Record<string, any> | undefined> {
  const require = createRequire(new URL("package.json", OTEL_DIR));
  const load = async (name: string) => await import(pathToFileURL(require.resolve(name)).href);
  try {
    const [api, base, hooks, core] = await Promise.all([
      load("@opentelemetry/api"),
      load("@opentelemetry/sdk-trace-base"),
      load("@opentelemetry/context-async-hooks"),
      load("@opentelemetry/core"),
    ]);
    return { api, ...base, ...hooks, ...core };
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

otelCases.push({
  name: "opentelemetry: a call over a Unix socket is one trace, client span to server span",
  async fn() {
    const sdk = await loadSdk();
    if (sdk === undefined) {
      console.warn(`skipped on ${runtimeName()}: ${OTEL_PACKAGES} is not in .tools/otel/`);
      return;
    }
    const {
      api,
      AsyncLocalStorageContextManager,
      BasicTracerProvider,
      InMemorySpanExporter,
      SimpleSpanProcessor,
      W3CTraceContextPropagator,
    } = sdk;
    const exporter = new InMemorySpanExporter();
    api.trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
    );
    api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const dir = await mkdtemp(`${tmpdir()}/cdo`);
    try {
      const tracer = api.trace.getTracer("app");
      const listener = await listenUnix(`${dir}/s`);
      const accepted = listener.accept();
      const client = await connectUnix(`${dir}/s`);
      const handlers = {
        echo: (value: number) => {
          // A span the handler starts joins the caller's trace.
          tracer.startSpan("inner").end();
          return value;
        },
        fail: (): never => {
          throw new RangeError("no");
        },
      };
      const [serving, calling] = await Promise.all([
        openChannel(await accepted, { handlers }),
        openChannel<typeof handlers>(client),
      ]);
      await listener.close();
      try {
        await tracer.startActiveSpan("request", async (span: { end(): void }) => {
          assert.equal(await calling.remote.echo(7), 7);
          await assert.rejects(calling.remote.fail(), RemoteError);
          span.end();
        });
      } finally {
        await calling.close();
        await serving.closed;
      }
      const spans: FinishedSpan[] = exporter.getFinishedSpans();
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
    } finally {
      api.trace.disable();
      api.context.disable();
      api.propagation.disable();
      await rm(dir, { recursive: true, force: true });
    }
  },
});
