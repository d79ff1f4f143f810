// The worker of testdata/telemetry/app.ts: its handler calls the parent back.
import type { CallContext } from "../../channel/call_context.ts";
import { serveWorker } from "../../workers/serve_worker.ts";

interface Parent {
  fromParent(n: number): { n: number; traceId: string; serviceTraceId: string };
}

const handlers = {
  work: async (n: number, ctx: CallContext<Parent>) => {
    const back = await ctx.channel.remote.fromParent(n);
    return {
      worker: n,
      parent: back.n,
      parentTraceId: back.traceId,
      serviceTraceId: back.serviceTraceId,
    };
  },
  /** A stream of `count` ticks, `ms` apart: its spans last until the stream ends. */
  async *ticks({ count, ms }: { count: number; ms: number }) {
    for (let i = 0; i < count; i++) {
      await new Promise((resolve) => setTimeout(resolve, ms));
      yield i;
    }
  },
};

export type TelemetryWorkerApi = typeof handlers;

await serveWorker<Parent>(handlers);
