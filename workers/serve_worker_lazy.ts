/**
 * The {@linkcode serveWorker} of `@conduit/ipc` and `@conduit/ipc/workers`: it loads the
 * worker's side (`@conduit/ipc/workers/serve`) when it is called, so that a parent that
 * imports those entrypoints never loads it. A worker module imports `serveWorker` from
 * `@conduit/ipc/workers/serve`, which loads it at once and starts sooner.
 *
 * @module
 */

import type { Channel } from "../channel/channel.ts";
import type { CheckedHandlers } from "../channel/types.ts";
import type { ServeWorkerOptions } from "./serve_worker.ts";

export {
  DEFAULT_WORKER_CALL_TIMEOUT,
  DEFAULT_WORKER_TRUST_PEER,
  WORKER_ENV,
  WORKER_SOCKET_ENV,
} from "./worker_env.ts";
export type { ServeWorkerOptions };

/**
 * Serves `handlers` to the parent process that spawned this one with `spawnWorker`: the
 * `serveWorker` of `@conduit/ipc/workers/serve` (see there), loaded on this call.
 *
 * @typeParam Parent The handler interface the parent serves (for `channel.remote`).
 * @typeParam Handlers The handler object (inferred).
 * @param handlers The methods the parent can call; see `ChannelOptions.handlers`.
 * @param options The codec, limits and exit behaviour; see {@linkcode ServeWorkerOptions}.
 * @returns The open channel to the parent, once the handshake has succeeded.
 *
 * @example A worker spawned and called
 * ```ts
 * import { spawnWorker } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 * // The worker module (examples/_echo_worker.ts) ends with:
 * //   if (import.meta.main) await serveWorker(handlers);
 * import type { EchoApi } from "../examples/_echo_worker.ts";
 *
 * const url = new URL("../examples/_echo_worker.ts", import.meta.url);
 * await using worker = await spawnWorker<EchoApi>(url);
 * assert.equal(await worker.remote.echo(42), 42);
 * ```
 */
export async function serveWorker<
  Parent extends object = Record<string, never>,
  Handlers extends object = object,
>(
  handlers: Handlers & CheckedHandlers<Handlers>,
  options: ServeWorkerOptions = {},
): Promise<Channel<Parent>> {
  const worker = await import("./serve_worker.ts");
  return await worker.serveWorker<Parent, Handlers>(handlers, options);
}
