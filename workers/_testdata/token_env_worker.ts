// A worker for socket_hostile_test.ts: says what its environment still holds once it serves.
import { serveWorker } from "../serve_worker.ts";

const handlers = {
  /** The secret variable, if serveWorker left it for this worker's children to inherit. */
  token: (): string | null => Deno.env.get("CONDUIT_WORKER_TOKEN") ?? null,
};

/** The API this worker serves. */
export type TokenEnvApi = typeof handlers;

if (import.meta.main) await serveWorker(handlers);
