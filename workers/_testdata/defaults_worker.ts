// A worker for the default-options tests: what deadlines its calls carry, values echoed
// through the default codec, and a slow stream.
import type { CallContext } from "../../channel/call_context.ts";
import { serveWorker } from "../serve_worker.ts";

/** What the parent serves to this worker. */
export interface DefaultsParentApi {
  /** The deadline the worker's call carried (`null` for none). */
  deadline(_: undefined, ctx: CallContext): number | null;
}

const handlers = {
  echo: <T>(value: T): T => value,
  /** The deadline the parent's call carried (`null` for none). */
  deadline: (_: undefined, ctx: CallContext): number | null => ctx.deadline ?? null,
  /** The deadline of this worker's call to the parent, as the parent saw it. */
  parentDeadline: (_: undefined, ctx: CallContext<DefaultsParentApi>): Promise<number | null> =>
    ctx.channel.remote.deadline(undefined),
  /** Yields `count` numbers, one every `ms`. */
  async *slowCount({ count, ms }: { count: number; ms: number }): AsyncIterable<number> {
    for (let i = 0; i < count; i++) {
      await new Promise((resolve) => setTimeout(resolve, ms));
      yield i;
    }
  },
};

/** The API this worker serves. */
export type DefaultsApi = typeof handlers;

if (import.meta.main) await serveWorker(handlers);
