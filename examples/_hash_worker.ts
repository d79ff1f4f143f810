/**
 * The worker module of `quickstart_worker.ts` (and of the README's quickstart): a hash and a
 * stream, served over the transport spawnWorker chose (a Unix socket, or its stdin/stdout).
 *
 * @module
 */

import { serveWorker } from "@conduit/ipc/workers/serve";

const handlers = {
  /** A result: the caller gets a `Promise<string>`. */
  async sha256(text: string): Promise<string> {
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  },
  /** An async generator: the caller gets a stream it iterates with `for await`. */
  async *countdown(from: number): AsyncIterable<number> {
    for (let i = from; i > 0; i--) yield i;
  },
};

/** The API the parent calls. */
export type HashApi = typeof handlers;

await serveWorker(handlers);
