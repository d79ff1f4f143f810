// The worker module the cross-runtime cases spawn under Deno, Node and Bun
// (`spawnWorker(url, { runtime })`): the same source on each, importing conduit by relative
// path so that it runs straight from a checkout.

import type { CallContext } from "../channel/mod.ts";
import { serveWorker } from "../workers/serve_worker.ts";
import { streamHandlers } from "./_stream_handlers.ts";

/** What the parent serves to this worker. */
export interface ParentApi {
  /** Doubles `x` in the parent. */
  double(x: number): number;
  /** Never answers: settles when cancelled. */
  hang(): Promise<never>;
}

// Printed while the module loads: over stdio it must reach the parent's stderr, not the channel.
console.log("worker module loading");

let cancelled = 0;

/** The handlers this worker serves. */
export const handlers = {
  /** The runtime running this worker. */
  runtime: (): string => "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node",
  echo: <T>(value: T): T => value,
  ...streamHandlers,
  /** Waits until the caller cancels it. */
  wait: (_: null, ctx: CallContext): Promise<never> =>
    new Promise((_, reject) => {
      ctx.signal.addEventListener("abort", () => {
        cancelled++;
        reject(ctx.signal.reason);
      });
    }),
  /** How many `wait` calls were cancelled. */
  cancelled: (): number => cancelled,
  fail: (message: string): never => {
    throw new RangeError(message);
  },
  callParent: async (x: number, ctx: CallContext<ParentApi>): Promise<number> =>
    await ctx.channel.remote.double(x),
  /** Calls the parent's `hang`, cancels it after `ms`, and says how it ended. */
  cancelParent: async (ms: number, ctx: CallContext<ParentApi>): Promise<string> => {
    const reason = new Error("gave up");
    const aborted = new AbortController();
    const timer = setTimeout(() => aborted.abort(reason), ms);
    try {
      await ctx.channel.remote.hang(undefined, { signal: aborted.signal });
      return "answered";
    } catch (error) {
      return error === reason ? "cancelled" : `failed: ${error}`;
    } finally {
      clearTimeout(timer);
    }
  },
  /** Writes a file at `path`: "written", or the error's code (a permission model's refusal). */
  tryWrite: async (path: string): Promise<string> => {
    try {
      await (await import("node:fs/promises")).writeFile(path, "x");
      return "written";
    } catch (error) {
      return String((error as { code?: string }).code ?? error);
    }
  },
  /** Prints `text` with console.log (over stdio: to the parent's stderr). */
  log: (text: string): void => console.log(text),
  /** Exits this process with `code`, mid-call. */
  crash: (code: number): never => {
    const exit = (globalThis as { Deno?: { exit(code: number): never } }).Deno?.exit ??
      (globalThis as unknown as { process: { exit(code: number): never } }).process.exit;
    return exit(code);
  },
};

/** This worker's API, for the parent. */
export type WorkerApi = typeof handlers;

serveWorker(handlers);
