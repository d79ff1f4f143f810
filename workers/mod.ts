/**
 * Workers: run handlers in a subprocess, or a Web Worker thread (`thread: true`), and call
 * them through a typed channel. {@linkcode spawnWorker} starts one (a Deno module with
 * least-privilege permissions, or any command that speaks the conduit protocol) and
 * {@linkcode serveWorker} is the worker's side;
 * {@linkcode WorkerPool} spreads calls over several workers and restarts crashed ones.
 * The {@linkcode serveWorker} here loads the worker's side when it is called; a worker module
 * imports it from `@conduit/ipc/workers/serve` instead, which loads only the worker's side,
 * at once, and so starts the worker faster.
 * Worker exits surface as {@linkcode WorkerExitedError}; nothing hangs and no worker
 * outlives its parent.
 *
 * @example
 * ```ts
 * import { spawnWorker } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 * import type { EchoApi } from "../examples/_echo_worker.ts";
 *
 * await using worker = await spawnWorker<EchoApi>(
 *   new URL("../examples/_echo_worker.ts", import.meta.url),
 * );
 * assert.equal(await worker.remote.echo(42), 42);
 * ```
 *
 * @module
 */

export * from "./spawn_worker.ts";
export * from "./serve_worker_lazy.ts";
export * from "./worker_pool.ts";
export * from "./errors.ts";
