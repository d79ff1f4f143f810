// A worker whose own side ends the channel with a coded GOODBYE during its parent's close():
// `askParent` waits for the parent's `wait`, which does not answer, and this side's
// drainTimeout (100 ms) is shorter than the parent's, so once the parent says GOODBYE this
// side gives up first and says goodbye with the code `aborted` (its drainTimeout passed).
import type { CallContext } from "../../channel/call_context.ts";
import { serveWorker } from "../serve_worker.ts";

/** What the parent serves: `wait`, which answers only once its call is cancelled. */
export interface WaitingParentApi {
  wait(): Promise<void>;
}

/** The parent's `wait`: settles only when its call is cancelled or its channel ends. */
export function waitForCancel(_: unknown, ctx: CallContext): Promise<void> {
  return new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
}

const handlers = {
  /** Calls the parent's `wait`, which holds this side's drain open. */
  askParent: async (_: null, ctx: CallContext<WaitingParentApi>): Promise<void> =>
    await ctx.channel.remote.wait(),
};

/** The API this worker serves. */
export type GoodbyeApi = typeof handlers;

if (import.meta.main) await serveWorker(handlers, { drainTimeout: 100 });
