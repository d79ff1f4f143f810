// A worker for the tests and the examples: echo, streams, call-backs, crashes and hangs.
import type { CallContext } from "../../channel/call_context.ts";
import { msgpackCodec } from "../../codecs/msgpack.ts";
import { serveWorker } from "../serve_worker.ts";

/** What the parent serves to this worker. */
export interface ParentApi {
  double(x: number): number;
}

const handlers = {
  echo: <T>(value: T): T => value,
  pid: (): number => Deno.pid,
  /** Answers with this worker's pid after `ms`. */
  slowPid: (ms: number): Promise<number> =>
    new Promise((resolve) => setTimeout(() => resolve(Deno.pid), ms)),
  async *count(to: number): AsyncIterable<number> {
    for (let i = 1; i <= to; i++) yield i;
  },
  sleep: (ms: number): Promise<string> =>
    new Promise((resolve) => setTimeout(() => resolve("slept"), ms)),
  /** Calls the parent back while serving this call. */
  callParent: async (x: number, ctx: CallContext<ParentApi>): Promise<number> =>
    await ctx.channel.remote.double(x),
  /** Prints with every console method that would reach stdout, then answers. */
  chatty(): string {
    console.log("log line");
    console.info("info line");
    console.debug("debug line");
    console.dir({ dir: 1 });
    console.table([{ a: 1 }]);
    console.count();
    console.time("t");
    console.timeEnd("t");
    console.group("group");
    console.groupEnd();
    return "still framed";
  },
  /** Exits the process mid-call. */
  exit(code: number): never {
    console.error(`exiting with ${code}`);
    Deno.exit(code);
  },
  /** Throws outside any handler, which crashes the process. */
  crash(message: string): Promise<never> {
    setTimeout(() => {
      throw new Error(message);
    });
    return new Promise(() => {});
  },
  /** Blocks the event loop: no frame goes out, not even a PONG. */
  hang(ms: number): string {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      // Spinning on purpose.
    }
    return "unblocked";
  },
  /** Adds up a stream from the caller. */
  async sum(values: AsyncIterable<number>): Promise<number> {
    let total = 0;
    for await (const value of values) total += value;
    return total;
  },
  /** A thread worker closes itself (`self.close()`) mid-call. */
  closeSelf(): Promise<never> {
    (globalThis as unknown as { close(): void }).close();
    return new Promise(() => {});
  },
  fail(message: string): never {
    throw new TypeError(message);
  },
};

/** The API this worker serves. */
export type EchoApi = typeof handlers;

if (import.meta.main) {
  await serveWorker(handlers, {
    codec: Deno.args.includes("--msgpack") ? msgpackCodec() : undefined,
  });
}
