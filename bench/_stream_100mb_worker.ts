// The worker of bench/stream_100mb.ts's "worker" case: serves `chunks` with serveWorker's
// default options, as a user's worker module would.
import { serveWorker } from "@conduit/ipc/workers/serve";
import { streamHandlers } from "./_stream_100mb_api.ts";

if (import.meta.main) await serveWorker(streamHandlers);
