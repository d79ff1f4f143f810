/**
 * The contract between `spawnWorker` (the parent) and `serveWorker` (the worker) beyond the
 * conduit protocol itself: how the worker knows it was started as one, how the parent names
 * the Unix socket to connect to, and what the worker trusts its parent with. Both sides import
 * it; neither imports the other.
 *
 * @module
 */

/**
 * The environment variable that tells a process `spawnWorker` started it as a worker: set to
 * `"1"`, and readable by every Deno worker module (`spawnWorker` grants reading it).
 * `serveWorker` refuses to serve without it, so a parent that imports a value from a worker
 * module does not start serving in its own process. A worker started another way (a
 * `WorkerCommand` running `deno`) needs it set and `--allow-env=CONDUIT_WORKER`.
 *
 * @example
 * ```ts
 * import { WORKER_ENV } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * assert.equal(WORKER_ENV, "CONDUIT_WORKER");
 * ```
 */
export const WORKER_ENV = "CONDUIT_WORKER";

/**
 * The environment variable through which `spawnWorker` names the Unix socket a worker
 * connects to (`transport: "unix"`); unset for the stdio transport.
 *
 * @example
 * ```ts
 * import { WORKER_SOCKET_ENV } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * assert.equal(WORKER_SOCKET_ENV, "CONDUIT_WORKER_SOCKET");
 * ```
 */
export const WORKER_SOCKET_ENV = "CONDUIT_WORKER_SOCKET";

/** The default `trustPeer` of both ends of a worker's channel: true (the parent is our owner). */
export const DEFAULT_WORKER_TRUST_PEER = true;

/**
 * The default `defaultTimeout` of both ends of a worker's channel: `Infinity`, no deadline.
 * A worker runs your own long jobs (a 70 s stream, a 65 s call), so nothing ends them unless
 * you ask: pass `timeout` per call or `defaultTimeout` to `spawnWorker`/`serveWorker`. Network
 * channels keep `DEFAULT_CALL_TIMEOUT` (60 s), because a remote peer can stall
 * without ever closing the connection, while a worker that dies closes its pipes.
 *
 * @example
 * ```ts
 * import { DEFAULT_WORKER_CALL_TIMEOUT } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_WORKER_CALL_TIMEOUT, Infinity);
 * ```
 */
export const DEFAULT_WORKER_CALL_TIMEOUT: number = Infinity;
