/**
 * One trace across two processes: a span in the parent, a call to a worker, and the worker's
 * handler running inside the same trace. With Deno's OpenTelemetry on, both spans of the call
 * (client and server) are exported with the parent's span; see docs/interceptors.md for
 * starting Jaeger and opening the trace.
 *
 *   OTEL_DENO=true OTEL_SERVICE_NAME=conduit-example deno run -A examples/tracing.ts
 *
 * Without OTEL_DENO it runs untraced and says so.
 *
 * @module
 */

import { trace } from "@opentelemetry/api";
import { spawnWorker } from "@conduit/ipc";
import type { TracedApi } from "./_traced_worker.ts";

const traced = Deno.env.get("OTEL_DENO") === "true";
await using worker = await spawnWorker<TracedApi>(
  new URL("./_traced_worker.ts", import.meta.url),
);
await trace.getTracer("example").startActiveSpan("request", async (span) => {
  try {
    const own = span.spanContext().traceId;
    const seen = await worker.remote.traceId();
    console.log(`the parent's span is in trace ${own}; the worker's handler ran in ${seen}`);
    if (traced && seen !== own) {
      throw new Error("the worker's handler is not in the parent's trace");
    }
    if (!traced) console.log("(telemetry is off: run with OTEL_DENO=true to trace)");
  } finally {
    span.end();
  }
});
