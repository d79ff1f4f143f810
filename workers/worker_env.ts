/**
 * The contract between `spawnWorker` (the parent) and `serveWorker` (the worker) beyond the
 * conduit protocol itself: how the parent names the Unix socket to connect to, and what the
 * worker trusts its parent with. Both sides import it; neither imports the other.
 *
 * @module
 */

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
