// The thread worker of testdata/telemetry/paths.ts: its handler calls the parent back.
import { trace } from "@opentelemetry/api";
import type { CallContext } from "../../channel/call_context.ts";
import { serveWorker } from "../../workers/serve_worker.ts";

interface Parent {
  viaServe(n: number): { n: number; traceIds: string[] };
}

const handlers = {
  hop: async (n: number, ctx: CallContext<Parent>) => {
    const back = await ctx.channel.remote.viaServe(n + 1);
    const traceId = trace.getActiveSpan()?.spanContext().traceId ?? "none";
    return { n: back.n, traceIds: [traceId, ...back.traceIds] };
  },
};

export type TelemetryThreadApi = typeof handlers;

await serveWorker<Parent>(handlers);
