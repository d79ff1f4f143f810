/**
 * The worker module the API documentation's examples spawn (`spawnWorker`, `WorkerPool`,
 * `serveWorker`): a result, a stream, a call back into the parent, a slow call and an exit.
 * It is published with the package, so every example can be run as it is written.
 *
 *   const url = new URL("../examples/_echo_worker.ts", import.meta.url);
 *   await using worker = await spawnWorker<EchoApi>(url);
 *
 * @module
 */

import type { CallContext } from "@conduit/ipc";
import { serveWorker } from "@conduit/ipc/workers/serve";

/** What the parent serves to this worker (see `callParent`). */
export interface ParentApi {
  /** Doubles a number, in the parent. */
  double(x: number): number;
}

/** The handlers this worker serves (the test worker serves them too, with more). */
export const echoHandlers = {
  /** Answers with the value it was given. */
  echo: <T>(value: T): T => value,
  /** A stream: yields 1, 2, … up to `to`. */
  async *count(to: number): AsyncIterable<number> {
    for (let i = 1; i <= to; i++) yield i;
  },
  /** Answers "slept" after `ms` milliseconds. */
  sleep: (ms: number): Promise<string> =>
    new Promise((resolve) => setTimeout(() => resolve("slept"), ms)),
  /** Calls the parent back while serving this call: `double(x)` there. */
  callParent: async (x: number, ctx: CallContext<ParentApi>): Promise<number> =>
    await ctx.channel.remote.double(x),
  /** Exits this worker process mid-call with `code`. */
  exit(code: number): never {
    Deno.exit(code);
  },
};

/** The API this worker serves: the parent imports only this type. */
export type EchoApi = typeof echoHandlers;

if (import.meta.main) await serveWorker<ParentApi>(echoHandlers);
