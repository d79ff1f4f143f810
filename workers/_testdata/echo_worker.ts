// A worker for the tests and the examples: echo, streams, call-backs, crashes and hangs.
import type { CallContext } from "../../channel/call_context.ts";
import { echoHandlers } from "../../examples/_echo_worker.ts";
import { msgpackCodec } from "../../codecs/msgpack.ts";
import { serveWorker } from "../serve_worker.ts";

export type { ParentApi } from "../../examples/_echo_worker.ts";

let spinsStarted = 0;

const handlers = {
  // echo, count, sleep, callParent and exit, as the documentation's example worker serves them.
  ...echoHandlers,
  pid: (): number => Deno.pid,
  /** Answers with this worker's pid after `ms`. */
  slowPid: (ms: number): Promise<number> =>
    new Promise((resolve) => setTimeout(() => resolve(Deno.pid), ms)),
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
  /** Exits the process mid-call, saying so on stderr. */
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
  /** Blocks the event loop (a cancel goes unseen), then answers with this worker's pid. */
  spin(ms: number): number {
    spinsStarted++;
    const end = Date.now() + ms;
    while (Date.now() < end) {
      // Spinning on purpose.
    }
    return Deno.pid;
  },
  /** How many `spin` calls this worker began. */
  spins(): number {
    return spinsStarted;
  },
  /**
   * Counts and hashes an upload: the bytes it received, their SHA-256, who received them, and
   * the call's key and attempt.
   */
  async digest(
    chunks: AsyncIterable<Uint8Array>,
    ctx: CallContext,
  ): Promise<
    { bytes: number; sha256: string; pid: number; key: string | undefined; attempt: number }
  > {
    const parts: Uint8Array[] = [];
    for await (const chunk of chunks) parts.push(chunk);
    const all = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
    parts.reduce((at, part) => (all.set(part, at), at + part.length), 0);
    const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", all));
    const sha256 = Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("");
    return { bytes: all.length, sha256, pid: Deno.pid, key: ctx.key, attempt: ctx.attempt };
  },
  /** `count` fresh items of `bytes` bytes, every byte of item `i` equal to `i & 0xff`. */
  async *blobs({ count, bytes }: { count: number; bytes: number }): AsyncIterable<Uint8Array> {
    for (let i = 0; i < count; i++) yield new Uint8Array(bytes).fill(i & 0xff);
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
