// What differs between the users of JSON-RPC 2.0 (public through @conduit/ipc/jsonrpc): the
// notification that cancels a request and whether a cancelled request is still answered, and
// the notification that reports progress with where its token goes. LSP and MCP are given;
// others are plain objects.

/** A request id as JSON-RPC allows it. */
export type JsonRpcId = number | string;

/** How a JSON-RPC peer is told to stop a request, and how it tells us. */
export interface JsonRpcCancel {
  /** The notification's method (`$/cancelRequest` for LSP, `notifications/cancelled` for MCP). */
  readonly method: string;
  /** The notification's params for request `id`. */
  param(id: JsonRpcId, reason: string): unknown;
  /** The request a received cancel notification is about; undefined when it names none. */
  id(param: unknown): JsonRpcId | undefined;
  /** The reason a received cancel notification gives, if any. */
  reason(param: unknown): string | undefined;
  /**
   * Whether a cancelled request is still answered (LSP: with error -32800; MCP: not at all).
   * When it is, this side answers the peer's cancelled requests too.
   */
  readonly answered: boolean;
}

/** How progress about a request travels: a token in the request, notifications naming it. */
export interface JsonRpcProgress {
  /** The notification's method (`$/progress` for LSP, `notifications/progress` for MCP). */
  readonly method: string;
  /** The request's params with `token` put where the peer looks for it. */
  withToken(param: unknown, token: string): unknown;
  /** The token a request's params carry, if any. */
  tokenOf(param: unknown): JsonRpcId | undefined;
  /** The token a progress notification names. */
  token(param: unknown): JsonRpcId | undefined;
  /** What a progress notification reports (handed to the caller's `onProgress`). */
  value(param: unknown): unknown;
  /** The params of a progress notification reporting `value` under `token`. */
  param(token: JsonRpcId, value: unknown): unknown;
  /**
   * The partial result token a request's params carry, if any (LSP's `partialResultToken`):
   * the progress notifications naming it carry the call's partial results, so the call is a
   * stream of them, then its final result. Left out, no call has partial results.
   */
  partialTokenOf?(param: unknown): JsonRpcId | undefined;
}

/** The conventions of one family of JSON-RPC peers. */
export interface JsonRpcDialect {
  /** Cancellation. */
  readonly cancel: JsonRpcCancel;
  /** Progress tied to a request. */
  readonly progress: JsonRpcProgress;
  /**
   * Whether a request's params carry a `_meta` object (MCP's): call headers travel there, a
   * string member each (`traceparent`, `tracestate`, …). Without it, headers are not sent.
   */
  readonly meta?: boolean;
}

function field(param: unknown, name: string): unknown {
  return typeof param === "object" && param !== null
    ? (param as Record<string, unknown>)[name]
    : undefined;
}

function asId(value: unknown): JsonRpcId | undefined {
  return typeof value === "number" || typeof value === "string" ? value : undefined;
}

function asString(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** Copies `param` (an object, or nothing) with `key` set to `value`. */
function withField(param: unknown, key: string, value: unknown): Record<string, unknown> {
  if (
    param !== undefined && (typeof param !== "object" || param === null || Array.isArray(param))
  ) {
    throw new TypeError("Progress needs params that are an object (or none)");
  }
  return { ...(param as Record<string, unknown> | undefined), [key]: value };
}

/**
 * The Language Server Protocol's: `$/cancelRequest`, and `$/progress` with `workDoneToken`
 * (work done, to `onProgress`) or `partialResultToken` (partial results: the call's stream).
 *
 * @example
 * ```ts
 * import { LSP_DIALECT } from "@conduit/ipc/jsonrpc";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(LSP_DIALECT.cancel.param(7, "stop"), { id: 7 });
 * assert.equal(LSP_DIALECT.progress.tokenOf({ workDoneToken: "t" }), "t");
 * assert.equal(LSP_DIALECT.progress.partialTokenOf?.({ partialResultToken: 3 }), 3);
 * ```
 */
export const LSP_DIALECT: JsonRpcDialect = Object.freeze({
  cancel: Object.freeze({
    method: "$/cancelRequest",
    param: (id: JsonRpcId) => ({ id }),
    id: (param: unknown) => asId(field(param, "id")),
    reason: () => undefined,
    answered: true,
  }),
  progress: Object.freeze({
    method: "$/progress",
    withToken: (param: unknown, token: string) => withField(param, "workDoneToken", token),
    tokenOf: (param: unknown) => asId(field(param, "workDoneToken")),
    token: (param: unknown) => asId(field(param, "token")),
    value: (param: unknown) => field(param, "value"),
    param: (token: JsonRpcId, value: unknown) => ({ token, value }),
    partialTokenOf: (param: unknown) => asId(field(param, "partialResultToken")),
  }),
});

/**
 * The Model Context Protocol's: `notifications/cancelled` with `requestId` (never answered)
 * and `notifications/progress` with `_meta.progressToken`.
 *
 * @example
 * ```ts
 * import { MCP_DIALECT } from "@conduit/ipc/jsonrpc";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(MCP_DIALECT.cancel.param(7, "stop"), { requestId: 7, reason: "stop" });
 * assert.deepEqual(MCP_DIALECT.progress.withToken({ a: 1 }, "t"), {
 *   a: 1,
 *   _meta: { progressToken: "t" },
 * });
 * ```
 */
export const MCP_DIALECT: JsonRpcDialect = Object.freeze({
  meta: true,
  cancel: Object.freeze({
    method: "notifications/cancelled",
    param: (requestId: JsonRpcId, reason: string) => ({ requestId, reason }),
    id: (param: unknown) => asId(field(param, "requestId")),
    reason: (param: unknown) => asString(field(param, "reason")),
    answered: false,
  }),
  progress: Object.freeze({
    method: "notifications/progress",
    withToken: (param: unknown, token: string) => {
      const meta = field(param, "_meta");
      return withField(param, "_meta", { ...(meta as object | undefined), progressToken: token });
    },
    tokenOf: (param: unknown) => asId(field(field(param, "_meta"), "progressToken")),
    token: (param: unknown) => asId(field(param, "progressToken")),
    value: (param: unknown) => {
      if (typeof param !== "object" || param === null) return param;
      const { progressToken: _, ...value } = param as Record<string, unknown>;
      return value;
    },
    param: (progressToken: JsonRpcId, value: unknown) => ({
      ...(typeof value === "object" && value !== null ? value : { progress: value }),
      progressToken,
    }),
  }),
});
