/**
 * Transports: pairs of byte streams with a `close()`. This module has the contract and the
 * in-memory pair; each OS transport has its own entrypoint (`@conduit/ipc/transports/stdio`,
 * `/unix`, `/tcp`).
 *
 * @example
 * ```ts
 * import { memoryPair } from "@conduit/ipc/transports";
 * import assert from "node:assert/strict";
 *
 * const [a, b] = memoryPair();
 * await a.close();
 * const { done } = await b.readable.getReader().read();
 * assert.ok(done);
 * await b.close();
 * ```
 *
 * @module
 */

export * from "./types.ts";
export * from "./memory.ts";
