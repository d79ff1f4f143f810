// A worker that is busy for a while before it serves (a top-level await: loading data, say),
// so that its parent's first messages reach it before it listens for them.
import { serveWorker } from "../serve_worker.ts";

const handlers = { ping: (): string => "pong" };

/** The API this worker serves. */
export type SlowStartApi = typeof handlers;

if (import.meta.main) {
  await new Promise((resolve) => setTimeout(resolve, 300));
  await serveWorker(handlers);
}
