// The worker side of the spawn-to-first-reply figure of the report's workers section: spawnWorker with default options, until the answer to the first
// call (process start, module load, handshake, one round trip).

import { spawnWorker, type SpawnWorkerOptions } from "@conduit/ipc/workers";
import type { PingApi } from "./_ping_worker.ts";

/** The ping worker, importing `serveWorker` from `@conduit/ipc/workers/serve` as the README does. */
export const PING_WORKER: URL = new URL("./_ping_worker.ts", import.meta.url);

/**
 * Spawns a ping worker (by default {@linkcode PING_WORKER}) with `options` (e.g.
 * `{ thread: true }`) and resolves with the time to its first reply, in ms.
 */
export async function workerFirstReply(
  options: SpawnWorkerOptions = {},
  module: URL = PING_WORKER,
): Promise<number> {
  const started = performance.now();
  const handle = await spawnWorker<PingApi>(module, options);
  await handle.remote.ping();
  const elapsed = performance.now() - started;
  await handle.close();
  return elapsed;
}
