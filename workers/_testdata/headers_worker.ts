// A worker for the interceptor tests: its handler-side interceptor notes each call's
// `x-request-id` header, and a nested call back to the parent carries it on.
import type { CallContext } from "../../channel/call_context.ts";
import { serveWorker } from "../serve_worker.ts";

interface Parent {
  whoCalls(_: null, ctx?: CallContext): string;
}

const handlers = {
  headers: (_: null, ctx: CallContext) => ({ ...ctx.headers }),
  /** Calls the parent back with the same request id. */
  nested: async (_: null, ctx: CallContext<Parent>) =>
    await ctx.channel.remote.whoCalls(null, {
      headers: { "x-request-id": ctx.headers["x-request-id"] ?? "none" },
    }),
};

export type HeadersApi = typeof handlers;

await serveWorker<Parent>(handlers, {
  interceptors: [{
    handle: async (call, next) => {
      const result = await next(call);
      return typeof result === "object" && result !== null ? { ...result, worker: "seen" } : result;
    },
  }],
});
