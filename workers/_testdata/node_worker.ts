// A worker module for node_child_test.ts, run by Node and Bun straight from the checkout (so
// it imports conduit by relative path and touches no Deno API): calls, a typed error, streams
// both ways, cancellation both ways, a call-back, console output and exits.
import process from "node:process";
import type { CallContext } from "../../channel/call_context.ts";
import { serveWorker } from "../serve_worker.ts";

/** The typed error this worker throws and its parent revives (both register the class). */
export class QuotaError extends Error {
  override name = "QuotaError";
}

/** What the parent serves to this worker. */
export interface NodeParentApi {
  /** Doubles a number, in the parent. */
  double(x: number): number;
  /** Waits until its call is cancelled; then `cancelled()` answers true. */
  waitForCancel(_: undefined): Promise<never>;
  /** Reports what happened to a call the parent cancelled. */
  report(event: string): void;
}

// Printed at module load, when asked (a preload must have moved stdout by then): must reach
// the parent's stderr, not the channel.
if (process.env.LOG_AT_LOAD === "1") {
  console.log("log at load");
  process.stdout.write("process.stdout at load\n");
}

const handlers = {
  /** The runtime this worker runs on, its pid and its argv[0]. */
  runtime: (): { runtime: string; pid: number } => ({
    runtime: "Bun" in globalThis ? "bun" : "node",
    pid: process.pid,
  }),
  /** Answers with the value it was given. */
  echo: <T>(value: T): T => value,
  /** Throws a QuotaError. */
  fail(limit: number): never {
    throw new QuotaError(`over the quota of ${limit}`);
  },
  /** A stream to the parent: yields 1, 2, … up to `to`. */
  async *count(to: number): AsyncIterable<number> {
    for (let i = 1; i <= to; i++) yield i;
  },
  /** A stream from the parent: adds it up. */
  async sum(numbers: AsyncIterable<number>): Promise<number> {
    let total = 0;
    for await (const n of numbers) total += n;
    return total;
  },
  /** Calls the parent back: `double(x)` there. */
  callParent: async (x: number, ctx: CallContext<NodeParentApi>): Promise<number> =>
    await ctx.channel.remote.double(x),
  /** Waits until the parent cancels this call, then tells the parent so. */
  waitForCancel(_: undefined, ctx: CallContext<NodeParentApi>): Promise<never> {
    return new Promise((_, reject) => {
      ctx.signal.addEventListener("abort", () => {
        void ctx.channel.remote.report("worker saw the cancel");
        reject(ctx.signal.reason);
      });
    });
  },
  /** Calls the parent's `waitForCancel` and cancels it after `ms`; answers how it ended. */
  async cancelParent(ms: number, ctx: CallContext<NodeParentApi>): Promise<string> {
    const signal = AbortSignal.timeout(ms);
    try {
      await ctx.channel.remote.waitForCancel(undefined, { signal });
      return "not cancelled";
    } catch (error) {
      return (error as Error).name;
    }
  },
  /** Prints to stdout every way a worker might, then answers. */
  chatty(): string {
    console.log("log line");
    console.info("info line");
    console.dir({ dir: 1 });
    process.stdout.write("process.stdout line\n");
    return "still framed";
  },
  /** Exits the process mid-call with `code`. */
  exit(code: number): never {
    process.exit(code);
  },
};

/** The API this worker serves. */
export type NodeWorkerApi = typeof handlers;

if (import.meta.main) await serveWorker<NodeParentApi>(handlers, { errorClasses: [QuotaError] });
