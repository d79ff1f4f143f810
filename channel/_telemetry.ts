// OpenTelemetry for channels, through Deno's own providers (OTEL_DENO=true): a call is a
// client span on the caller and a server span on the handler's side (RPC semantic
// conventions), the W3C trace context travels in the call's headers (`traceparent`,
// `tracestate`), and the handler runs inside the propagated context, so the spans it starts and
// the `fetch` calls it makes join the caller's trace. Durations and calls in flight are
// recorded through the runtime's meter provider. Loaded only when the runtime exports
// telemetry (channel.ts decides); `@opentelemetry/api` is what Deno registers its providers
// with.

import {
  type Attributes,
  context,
  metrics,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import type { Interceptor } from "./types.ts";

const tracer = trace.getTracer("conduit");
const meter = metrics.getMeter("conduit");
const clientDuration = meter.createHistogram("rpc.client.duration", {
  description: "Duration of calls this side made, until their result or error",
  unit: "ms",
});
const serverDuration = meter.createHistogram("rpc.server.duration", {
  description: "Duration of calls this side served, until its handler settled",
  unit: "ms",
});
const clientInFlight = meter.createUpDownCounter("rpc.client.in_flight", {
  description: "Calls this side made that have not settled",
});
const serverInFlight = meter.createUpDownCounter("rpc.server.in_flight", {
  description: "Calls this side serves whose handler has not settled",
});

/** The interceptor that traces and measures calls of a channel speaking `system`. */
export function telemetryInterceptor(system: "conduit" | "jsonrpc"): Interceptor {
  return {
    call: (call, next) => {
      const attributes: Attributes = { "rpc.system": system, "rpc.method": call.method };
      return measured(
        tracer.startSpan(call.method, { kind: SpanKind.CLIENT, attributes }),
        context.active(),
        attributes,
        clientDuration,
        clientInFlight,
        (active) => {
          propagation.inject(active, call.headers);
          return next(call);
        },
      );
    },
    handle: (call, next) => {
      const attributes: Attributes = { "rpc.system": system, "rpc.method": call.method };
      const parent = propagation.extract(context.active(), call.context.headers);
      return measured(
        tracer.startSpan(call.method, { kind: SpanKind.SERVER, attributes }, parent),
        parent,
        attributes,
        serverDuration,
        serverInFlight,
        () => next(call),
      );
    },
  };
}

/** Runs `run` inside `span` (a child of `parent`), recording its outcome and duration. */
async function measured(
  span: Span,
  parent: ReturnType<typeof context.active>,
  attributes: Attributes,
  duration: ReturnType<typeof meter.createHistogram>,
  inFlight: ReturnType<typeof meter.createUpDownCounter>,
  run: (active: ReturnType<typeof context.active>) => Promise<unknown>,
): Promise<unknown> {
  const started = performance.now();
  inFlight.add(1, attributes);
  const active = trace.setSpan(parent, span);
  let status = "ok";
  try {
    return await context.with(active, () => run(active));
  } catch (error) {
    status = error instanceof Error ? error.name : "error";
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: error instanceof Error ? error.message : String(error),
    });
    throw error;
  } finally {
    span.end();
    inFlight.add(-1, attributes);
    duration.record(performance.now() - started, { ...attributes, "rpc.status": status });
  }
}
