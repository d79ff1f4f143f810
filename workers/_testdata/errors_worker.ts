// A worker for serve_worker_test.ts: it tells the errors its channel raised apart with the
// classes a worker module imports.
import type { CallContext } from "../../channel/call_context.ts";
import { MethodNotFoundError, RemoteError } from "../../channel/errors.ts";
import { ConduitError, TransportClosedError } from "../../errors.ts";
import { serveWorker } from "../serve_worker.ts";

/** What the parent serves to this worker: nothing. */
export type NoParentApi = Record<string, never>;

const handlers = {
  /** Calls a method the parent does not serve; says which classes the error it got is of. */
  async classify(_: undefined, ctx: CallContext): Promise<Record<string, boolean | string>> {
    try {
      await (ctx.channel.remote as Record<string, (x: undefined) => Promise<unknown>>).missing(
        undefined,
      );
      return { threw: false };
    } catch (error) {
      return {
        name: (error as Error).name,
        MethodNotFoundError: error instanceof MethodNotFoundError,
        RemoteError: error instanceof RemoteError,
        ConduitError: error instanceof ConduitError,
        TransportClosedError: error instanceof TransportClosedError,
      };
    }
  },
};

/** The API this worker serves. */
export type ErrorsApi = typeof handlers;

if (import.meta.main) await serveWorker(handlers);
