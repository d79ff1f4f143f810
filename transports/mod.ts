/**
 * Transports: pairs of byte streams with a `close()`. This module has the contract and the
 * in-memory pair; every other transport has its own entrypoint, so a program loads only what
 * it uses: `@conduit/ipc/transports/stdio` (a child's pipes, or a worker's own stdio), `/unix`,
 * `/tcp` (and TLS), `/nats` (across machines), `/web_worker` (a Web Worker or `MessagePort`,
 * with transferred buffers) and `/shared_ring` (a `SharedArrayBuffer` ring between threads).
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
