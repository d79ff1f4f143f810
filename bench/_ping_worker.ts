// The smallest worker: one method that answers at once. Used by workers_bench.ts.
import { serveWorker } from "@conduit/ipc/workers/serve";

const handlers = { ping: (): string => "pong" };

/** The API of this worker. */
export type PingApi = typeof handlers;

if (import.meta.main) await serveWorker(handlers);
