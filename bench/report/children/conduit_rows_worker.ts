// The worker of conduit_rows.ts: one echo method, served with the structured codec, or with
// the raw codec when started with --raw.

import { rawCodec } from "../../../codecs/raw.ts";
import { serveWorker } from "../../../workers/serve_worker.ts";

const handlers = { echo: (value: unknown): unknown => value };

/** The worker's API, for the parent's types. */
export type RowsWorkerApi = typeof handlers;

if (import.meta.main) {
  // The default codec (structured) as a user leaves it, or the raw codec.
  await serveWorker(handlers, Deno.args.includes("--raw") ? { codec: rawCodec() } : {});
}
