// OpenTelemetry through Deno's own providers, checked in a real Jaeger: a Deno.serve request
// whose handler calls a pool's worker process, which calls the parent back, whose handler calls
// a service over NATS, is one trace with the spans in the expected parent/child chain, and the
// calls' and pools' metrics reach the collector.

import assert from "node:assert/strict";
import {
  haveJaeger,
  type Jaeger,
  type JaegerSpan,
  type MetricPoint,
  startJaeger,
} from "./_test_jaeger.ts";
import { haveNatsServer, startNatsServer } from "./transports/_test_nats_server.ts";

const NAME =
  "telemetry: Deno.serve → pool call → worker → call back → NATS service call is one trace, with metrics";

Deno.test({
  name: NAME,
  ignore: !haveJaeger(NAME) || !haveNatsServer,
  async fn() {
    await using jaeger = await startJaeger();
    await using nats = await startNatsServer();
    const service = `conduit-app-${crypto.randomUUID().slice(0, 8)}`;
    const app = await runTraced("app.ts", service, jaeger, {
      OTEL_METRIC_EXPORT_INTERVAL: "200",
      NATS_URL: nats.url,
    });
    assert.deepEqual({ worker: app.worker, parent: app.parent }, { worker: 1, parent: 20 });
    assert.deepEqual(app.ticks, [0, 1, 2]);
    // The handler the worker called back, and the NATS service it called, ran in the trace of
    // the HTTP request.
    assert.equal(app.parentTraceId, app.traceId);
    assert.equal(app.serviceTraceId, app.traceId);

    const named = (spans: JaegerSpan[], service: string, name: string, kind: string) =>
      spans.find((s) => s.service === service && s.name === name && s.tags["span.kind"] === kind);
    const worker = "conduit-test-worker";
    const spans = await jaeger.spans(
      service,
      // Both processes export in batches: wait for the whole trace (the fetch, the request,
      // four calls and their serving).
      (spans) => spans.filter((span) => span.traceId === app.traceId).length >= 10,
    );
    const inTrace = spans.filter((span) => span.traceId === app.traceId);
    // Deno.serve's span: the one server span of the app that is not a conduit call's.
    const request = inTrace.find((s) =>
      s.service === service && s.tags["span.kind"] === "server" &&
      s.tags["rpc.system"] === undefined
    );
    const callWork = named(inTrace, service, "work", "client");
    const serveWork = named(inTrace, worker, "work", "server");
    const callBack = named(inTrace, worker, "fromParent", "client");
    const serveBack = named(inTrace, service, "fromParent", "server");
    const callService = named(inTrace, service, "lookup", "client");
    const serveService = named(inTrace, service, "lookup", "server");
    const tree = inTrace.map((s) => `${s.service} ${s.tags["span.kind"]} ${s.name}`).join("\n");
    for (const span of [request, callWork, serveWork, callBack, serveBack, callService]) {
      assert.ok(span !== undefined, `a span is missing from the trace:\n${tree}`);
    }
    assert.equal(callWork!.parentId, request!.spanId, tree);
    assert.equal(serveWork!.parentId, callWork!.spanId, tree);
    assert.equal(callBack!.parentId, serveWork!.spanId, tree);
    assert.equal(serveBack!.parentId, callBack!.spanId, tree);
    assert.ok(serveService !== undefined, `the NATS service's span is missing:\n${tree}`);
    assert.equal(callService!.parentId, serveBack!.spanId, tree);
    assert.equal(serveService.parentId, callService!.spanId, tree);
    for (const span of [callWork!, serveWork!, callBack!, serveBack!, callService!, serveService]) {
      assert.equal(span.tags["rpc.system"], "conduit");
      assert.equal(span.tags["rpc.method"], span.name);
    }
    // A streamed call's spans last until its stream ended (three ticks 100 ms apart), on the
    // caller's side and the handler's.
    const callTicks = named(inTrace, service, "ticks", "client");
    const serveTicks = named(inTrace, worker, "ticks", "server");
    assert.ok(callTicks !== undefined && serveTicks !== undefined, tree);
    assert.equal(callTicks.parentId, request!.spanId, tree);
    assert.equal(serveTicks.parentId, callTicks.spanId, tree);
    for (const span of [callTicks, serveTicks]) {
      assert.ok(span.duration >= 250_000, `${span.name} lasted ${span.duration} µs`);
    }

    // Metrics, through the runtime's meter, as the collector received them: durations per
    // method on both sides, calls in flight, and the pools' counters.
    const point = (points: MetricPoint[], where: Partial<MetricPoint>, attributes = {}) =>
      points.find((p) =>
        Object.entries(where).every(([key, value]) => p[key as keyof MetricPoint] === value) &&
        Object.entries(attributes).every(([key, value]) => p.attributes[key] === value)
      );
    const wanted = (points: MetricPoint[]) => [
      point(points, { service, name: "rpc.client.duration", value: 1 }, { "rpc.method": "work" }),
      point(points, { service: worker, name: "rpc.server.duration", value: 1 }, {
        "rpc.method": "work",
        "rpc.system": "conduit",
        "rpc.status": "ok",
      }),
      point(points, { service, name: "rpc.server.duration", value: 1 }, {
        "rpc.method": "fromParent",
      }),
      point(points, { service, name: "rpc.client.in_flight" }, { "rpc.method": "ticks" }),
      point(points, { service, name: "conduit.pool.workers", value: 1 }, {
        "conduit.pool.kind": "worker",
      }),
      point(points, { service, name: "conduit.pool.completed" }, {
        "conduit.pool.kind": "nats",
        "conduit.pool.name": "telemetry-svc",
      }),
      point(points, { service: worker, name: "conduit.channel.sent_bytes" }, {
        "rpc.system": "conduit",
      }),
      point(points, { service, name: "conduit.channel.received_bytes" }, {
        "rpc.system": "conduit",
      }),
    ];
    const points = await jaeger.metrics((points) => wanted(points).every((p) => p !== undefined));
    const names = [...new Set(points.map((p) => `${p.service} ${p.name}`))].join("\n");
    for (const [i, found] of wanted(points).entries()) {
      assert.ok(found !== undefined, `metric ${i} is missing; received:\n${names}`);
    }
    // The NATS pool's lookup completed (a later export than the first may say so).
    const completed = points.filter((p) =>
      p.service === service && p.name === "conduit.pool.completed" &&
      p.attributes["conduit.pool.kind"] === "nats"
    ).map((p) => p.value);
    assert.ok(Math.max(...completed) >= 1, `the NATS pool completed ${completed}`);
    // The worker's channel sent its HELLO, results and ticks: more than a few frames' worth.
    const sent = points.filter((p) =>
      p.service === worker && p.name === "conduit.channel.sent_bytes"
    ).map((p) => p.value);
    assert.ok(Math.max(...sent) > 100, `the worker's channel sent ${sent} bytes`);
  },
});

const PATHS =
  "telemetry: a thread worker, serve() over a Unix socket, JSON-RPC and a fetch keep one trace";

Deno.test({
  name: PATHS,
  ignore: !haveJaeger(PATHS),
  async fn() {
    await using jaeger = await startJaeger();
    const service = `conduit-paths-${crypto.randomUUID().slice(0, 8)}`;
    const app = await runTraced("paths.ts", service, jaeger);
    assert.equal(app.n, 40);
    // The thread's handler, the parent's call-back, the served handler, the JSON-RPC handler
    // and the HTTP handler it fetched from all ran in the root span's trace.
    assert.deepEqual(app.traceIds, Array(5).fill(app.traceId));

    const spans = await jaeger.spans(
      service,
      (spans) => spans.filter((span) => span.traceId === app.traceId).length >= 11,
    );
    const inTrace = spans.filter((span) => span.traceId === app.traceId);
    const tree = inTrace.map((s) => `${s.tags["span.kind"]} ${s.name}`).join("\n");
    const named = (name: string, kind: string) => {
      const span = inTrace.find((s) => s.name === name && s.tags["span.kind"] === kind);
      assert.ok(span !== undefined, `${kind} ${name} is missing from the trace:\n${tree}`);
      return span;
    };
    const chain = [
      named("root", "internal"),
      named("hop", "client"),
      named("hop", "server"),
      named("viaServe", "client"),
      named("viaServe", "server"),
      named("served", "client"),
      named("served", "server"),
      named("rpcLookup", "client"),
      named("rpcLookup", "server"),
      named("GET", "client"),
    ];
    for (let i = 1; i < chain.length; i++) {
      assert.equal(chain[i].parentId, chain[i - 1].spanId, `${chain[i].name}:\n${tree}`);
    }
    assert.equal(chain[7].tags["rpc.system"], "jsonrpc");
    assert.equal(chain[1].tags["rpc.system"], "conduit");
  },
});

/**
 * Runs `testdata/telemetry/<program>` with Deno's OpenTelemetry exporting to `jaeger` as
 * `service`; what its last line of output says, as JSON.
 */
async function runTraced(
  program: string,
  service: string,
  jaeger: Jaeger,
  env: Record<string, string> = {},
): Promise<Record<string, unknown> & { traceId: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(`./testdata/telemetry/${program}`, import.meta.url).pathname],
    env: {
      OTEL_DENO: "true",
      OTEL_SERVICE_NAME: service,
      OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
      OTEL_DENO_CONSOLE: "ignore",
      ...env,
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  return JSON.parse(new TextDecoder().decode(output.stdout).trim().split("\n").at(-1)!);
}
