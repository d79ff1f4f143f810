/**
 * The worker of `examples/tracing.ts`: its handler answers with the trace it runs in.
 *
 * @module
 */

import { trace } from "@opentelemetry/api";
import { serveWorker } from "@conduit/ipc/workers/serve";

/** The handlers this worker serves. */
export const tracedHandlers = {
  /** The id of the trace this handler runs in ("none" when telemetry is off). */
  traceId: (): string => trace.getActiveSpan()?.spanContext().traceId ?? "none",
};

/** What the parent can call. */
export type TracedApi = typeof tracedHandlers;

if (import.meta.main) await serveWorker(tracedHandlers);
