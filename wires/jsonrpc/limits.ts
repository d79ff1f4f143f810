// JSON-RPC's default bounds, shared by openJsonRpc and the wire.

/**
 * The default `maxBatchMessages` of `openJsonRpc`: 1,000 requests and notifications in one
 * received batch, as go-ethereum's JSON-RPC server allows, and below the default
 * `maxInFlight` (1024), so a batch within it does not fill the calls in flight on its own.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_BATCH_MESSAGES } from "@conduit/ipc/jsonrpc";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_MAX_BATCH_MESSAGES, 1000);
 * ```
 */
export const DEFAULT_MAX_BATCH_MESSAGES = 1000;
