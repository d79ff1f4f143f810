// A hostile worker for workers/pool_hostile_test.ts, run as a process or a thread: handlers
// that spin for good, end the thread, post garbage or die part-way through a stream.
import type { CallContext } from "../../channel/call_context.ts";
import { serveWorker } from "../serve_worker.ts";
import { closePipe } from "./_close_pipe.ts";

/** What the parent serves to this worker. */
export interface ParentApi {
  /** The worker started attempt `attempt` of a call. */
  started(attempt: number): void;
}

const handlers = {
  /** A stream: yields 1, 2, … up to `to`. */
  async *count(to: number): AsyncIterable<number> {
    for (let i = 1; i <= to; i++) yield i;
  },
  echo: <T>(value: T): T => value,
  /** Answers "slept" after `ms` milliseconds. */
  sleep: (ms: number): Promise<string> =>
    new Promise((resolve) => setTimeout(() => resolve("slept"), ms)),
  /** Spins for good: no cancel is ever seen. */
  spinForever(): never {
    for (;;) {
      // Spinning on purpose.
    }
  },
  /** A thread closes itself mid-call. */
  closeSelf(): Promise<never> {
    (globalThis as unknown as { close(): void }).close();
    return new Promise(() => {});
  },
  /** A thread posts bytes that are no frame, then answers. */
  async garbage(): Promise<string> {
    const bytes = new Uint8Array(64).fill(0xff);
    (globalThis as unknown as { postMessage(m: unknown): void }).postMessage(bytes);
    await new Promise((resolve) => setTimeout(resolve, 100));
    return "answered";
  },
  /**
   * Tells the parent it started; on its first attempt then cuts its connection (stdio) and
   * lingers, as a worker does whose exit is slow to be known. Yields 1, 2, 3.
   */
  async *vanish(_: undefined, ctx: CallContext<ParentApi>): AsyncIterable<number> {
    await ctx.channel.remote.started(ctx.attempt);
    if (ctx.attempt === 1) {
      closePipe(1);
      await new Promise(() => {});
    }
    yield* [1, 2, 3];
  },
  /** Yields 1..`to`, and exits the worker after `dieAfter` items on its first attempt. */
  async *partial(
    { to, dieAfter }: { to: number; dieAfter: number },
    ctx: CallContext,
  ): AsyncIterable<number> {
    for (let i = 1; i <= to; i++) {
      if (i > dieAfter && ctx.attempt === 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        Deno.exit(3);
      }
      yield i;
    }
  },
};

/** The API this worker serves. */
export type HostileApi = typeof handlers;

if (import.meta.main) await serveWorker<ParentApi>(handlers);
