// The Language Server Protocol's error codes a client acts on (public through
// @conduit/ipc/jsonrpc), and how to recognise them on the RemoteError a call rejects with.

import { RemoteError } from "../../errors.ts";

/**
 * LSP's `RequestCancelled` (-32800): the request was cancelled (by the client's
 * `$/cancelRequest`); an LSP channel answers the peer's cancelled requests with it.
 *
 * @example
 * ```ts
 * import { REQUEST_CANCELLED } from "@conduit/ipc/jsonrpc";
 * import assert from "node:assert/strict";
 *
 * assert.equal(REQUEST_CANCELLED, -32800);
 * ```
 */
export const REQUEST_CANCELLED: number = -32800;

/**
 * LSP's `ContentModified` (-32801): the document changed while the server worked on the
 * request, so its result is stale. Ask again against the current content if it is still
 * wanted (vscode re-sends such requests for semantic tokens and the like), else drop it.
 *
 * @example
 * ```ts
 * import { CONTENT_MODIFIED } from "@conduit/ipc/jsonrpc";
 * import assert from "node:assert/strict";
 *
 * assert.equal(CONTENT_MODIFIED, -32801);
 * ```
 */
export const CONTENT_MODIFIED: number = -32801;

/**
 * LSP's `ServerCancelled` (-32802): the server cancelled the request itself (only requests
 * that allow it, such as pull diagnostics, whose error `data.retriggerRequest` says whether
 * to send it again).
 *
 * @example
 * ```ts
 * import { SERVER_CANCELLED } from "@conduit/ipc/jsonrpc";
 * import assert from "node:assert/strict";
 *
 * assert.equal(SERVER_CANCELLED, -32802);
 * ```
 */
export const SERVER_CANCELLED: number = -32802;

/**
 * Whether `error` is the peer's error response with JSON-RPC error code `code`: a
 * `RemoteError` whose `code` is that number.
 *
 * @param error What a call rejected with.
 * @param code The JSON-RPC error code ({@linkcode CONTENT_MODIFIED}, {@linkcode SERVER_CANCELLED}…).
 * @returns True when it is the peer's error with that code.
 *
 * @example
 * ```ts
 * import { CONTENT_MODIFIED, isRemoteErrorCode, SERVER_CANCELLED } from "@conduit/ipc/jsonrpc";
 * import { RemoteError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const stale = new RemoteError({ name: "RemoteError", message: "modified", code: -32801 });
 * assert.ok(isRemoteErrorCode(stale, CONTENT_MODIFIED));
 * assert.ok(!isRemoteErrorCode(stale, SERVER_CANCELLED));
 * assert.ok(!isRemoteErrorCode(new Error("local"), CONTENT_MODIFIED));
 * ```
 */
export function isRemoteErrorCode(
  error: unknown,
  code: number,
): error is RemoteError & { readonly code: number } {
  return error instanceof RemoteError && error.code === code;
}
