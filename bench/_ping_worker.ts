// The smallest worker: one method that answers at once. Used by workers_bench.ts.
import { serveWorker } from "../workers/serve_worker.ts";

const handlers = { ping: (): string => "pong" };

/** The API of this worker. */
export type PingApi = typeof handlers;

if (import.meta.main) await serveWorker(handlers);
