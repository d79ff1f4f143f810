// The ping worker of bench/_ping_worker.ts, importing `serveWorker` from `@conduit/ipc/workers`
// (which also loads the parent's side) instead of `@conduit/ipc/workers/serve`: spawn_time.ts
// shows what the lean entrypoint saves a worker's start.
import { serveWorker } from "@conduit/ipc/workers";

const handlers = { ping: (): string => "pong" };

if (import.meta.main) await serveWorker(handlers);
