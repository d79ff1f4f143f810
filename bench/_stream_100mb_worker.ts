// The worker of the report's 100 MB stream (bench/report/_workers.ts): serves `chunks` with serveWorker's
// default options, as a user's worker module would.
import { serveWorker } from "@conduit/ipc/workers/serve";
import { streamHandlers } from "./_stream_100mb_api.ts";

if (import.meta.main) await serveWorker(streamHandlers);
