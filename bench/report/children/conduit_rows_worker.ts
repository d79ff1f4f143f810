// The worker of conduit_rows.ts: one echo method, served with the structured codec, or with
// the raw codec when started with --raw. Runs under Deno, or Node for conduit's Node row.

import { rawCodec } from "../../../codecs/raw.ts";
import { serveWorker } from "../../../workers/serve_worker.ts";
import process from "node:process";

const handlers = { echo: (value: unknown): unknown => value };

/** The worker's API, for the parent's types. */
export type RowsWorkerApi = typeof handlers;

// The parent imports only this module's type, so this runs in the worker alone: the default
// codec (structured) as a user leaves it, or the raw codec.
await serveWorker(handlers, process.argv.includes("--raw") ? { codec: rawCodec() } : {});
