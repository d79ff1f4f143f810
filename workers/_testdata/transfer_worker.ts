// A worker for serve_worker_test.ts: its echo hands each param back with the transfer() a
// worker module imports, which the channel serveWorker runs must see.
import { transfer } from "../../transfer.ts";
import { rawCodec } from "../../codecs/raw.ts";
import { serveWorker } from "../serve_worker.ts";

const params: Uint8Array[] = [];

const handlers = {
  echo(bytes: Uint8Array): Uint8Array {
    params.push(bytes);
    return transfer(bytes);
  },
  /** How many of the params echoed so far the channel took back (detached, empty). */
  takenBack: (_: Uint8Array): Uint8Array =>
    new Uint8Array([params.filter((param) => param.length === 0).length]),
};

/** The API this worker serves. */
export type TransferApi = typeof handlers;

if (import.meta.main) await serveWorker(handlers, { codec: rawCodec() });
