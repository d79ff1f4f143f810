/**
 * JSON-RPC 2.0 on conduit's typed channel: drive a Language Server or an MCP server over a
 * child's stdio (or any transport), and serve one. {@linkcode openJsonRpc} returns the same
 * `Channel` as `openChannel` — a typed `remote` from an interface, handlers for the peer's
 * requests and notifications, `AbortSignal` cancellation, deadlines, typed errors — speaking
 * JSON-RPC with Content-Length (LSP) or NDJSON (MCP) framing and no handshake.
 *
 * - Params go by name (an object) or by position (an array); ids are numbers on the way out,
 *   numbers or strings on the way in; batches received are answered as one array.
 * - An error response `{ code, message, data }` rejects the call with a `RemoteError` of that
 *   `code` (a number) and `data`; a handler's thrown error with a numeric `code` (and `data`)
 *   is sent as it is, any other as -32603 (an error answer past `maxFrameBytes` is cut). A
 *   response (a `result`, an `error` or an id, no `method` or a null one) is never answered,
 *   and is taken without `"jsonrpc":"2.0"` as vscode-jsonrpc takes it.
 *   Unknown methods are answered -32601, a message that is not JSON -32700 and one that is
 *   no request -32600 (unless this side is the client: see `role`), and the connection goes
 *   on (each is reported to `onProtocolError`);
 *   a message over `maxFrameBytes` ends it with a `FrameTooLargeError` as the cause, since
 *   the next message can no longer be found. When the peer goes away, pending calls reject
 *   with `The server closed the connection` (with a child's exit status when known). Going
 *   away between messages with nothing in flight either way is how a JSON-RPC peer ends the
 *   connection: `closed` resolves then (not with work still running or held, nor after a
 *   child process that did not exit with 0).
 * - A batch received of more than `maxBatchMessages` requests and notifications is refused
 *   whole with one -32600 error (id null), and none of it runs.
 * - Aborting a call's `signal` (or its deadline passing) rejects it and sends the dialect's
 *   cancel notification; the peer's cancel fires the handler's `ctx.signal`. The call is over
 *   at once: an answer to it (one that crossed an MCP cancel, LSP's -32800) is dropped quietly,
 *   and a server that never sends one holds no `maxInFlight` slot.
 * - {@linkcode sendBatch} sends the requests and notifications its callback starts as one
 *   batch array.
 * - {@linkcode handle} serves a method after open and returns what stops it; `onRequest` and
 *   `onUnhandledNotification` catch what no handler serves.
 * - `onProgress` on a call puts a progress token in its params and receives the progress
 *   notifications naming it; {@linkcode sendProgress} reports progress from a handler.
 * - LSP partial results: a call whose params carry a `partialResultToken` is a stream (type
 *   its method as returning `AsyncIterable<T>`): it yields each `$/progress` value naming
 *   that token as it arrives, then the final result; leaving the loop cancels the request.
 *
 * @example A server and a client over a memory pair
 * ```ts
 * import { openJsonRpc } from "@conduit/ipc/jsonrpc";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * interface Server {
 *   add(params: [number, number]): number;
 *   greet(params: { name: string }): string;
 * }
 * const [a, b] = memoryPair();
 * const server = await openJsonRpc(a, {
 *   framing: "ndjson",
 *   handlers: {
 *     add: ([x, y]: [number, number]) => x + y,
 *     greet: ({ name }: { name: string }) => `hello ${name}`,
 *   } satisfies Server,
 * });
 * const client = await openJsonRpc<Server>(b, { framing: "ndjson" });
 * assert.equal(await client.remote.add([1, 2]), 3);
 * assert.equal(await client.remote.greet({ name: "lsp" }), "hello lsp");
 * await assert.rejects(client.call("nope" as "add", [0, 0]), { name: "RemoteError", code: -32601 });
 * await Promise.all([client.close(), server.close()]);
 * ```
 *
 * @module
 */

import { integerOption } from "../_options.ts";
import { jsonCodec } from "../codecs/json.ts";
import {
  type JsonRpcDialect,
  type JsonRpcId,
  LSP_DIALECT,
  MCP_DIALECT,
} from "../wires/jsonrpc/dialect.ts";
import { DEFAULT_MAX_BATCH_MESSAGES } from "../wires/jsonrpc/limits.ts";
import { type JsonRpcWire, jsonRpcWire } from "../wires/jsonrpc/wire.ts";
import type { JsonRpcOutbox } from "../wires/jsonrpc/outbox.ts";
import type { WireFactory } from "../wires/types.ts";
import {
  Channel,
  type ChannelOptions,
  notificationErrorReporter,
  openOn,
} from "../channel/channel.ts";
import type { ProtocolError } from "../protocol/format.ts";
import type { Transport } from "../transports/types.ts";
import type { CheckedHandlers, Interceptor } from "../channel/types.ts";
import type { CallContext } from "../channel/mod.ts";
import { HandlerTable } from "./_handlers.ts";

export type { JsonRpcCancel, JsonRpcProgress } from "../wires/jsonrpc/dialect.ts";
export type { JsonRpcDialect, JsonRpcId, ProtocolError, Transport };
// The channel types the API shows (the same as @conduit/ipc/channel's).
export type {
  AnyHandler,
  CallContext,
  CallDetails,
  CallOptions,
  Channel,
  CheckedHandlers,
  HandlerTakesOneParam,
  IncomingCallInfo,
  Interceptor,
  IsOneParamHandler,
  MethodName,
  OutgoingCallInfo,
  ParamOf,
  PeerInfo,
  RemoteArgs,
  RemoteMethod,
  RemoteOf,
  RemoteReturn,
  RemoteStream,
  ResultOf,
} from "../channel/mod.ts";
export type { ConduitError, RemoteError } from "../errors.ts";
export { DEFAULT_MAX_BATCH_MESSAGES, LSP_DIALECT, MCP_DIALECT };
export {
  CONTENT_MODIFIED,
  isRemoteErrorCode,
  REQUEST_CANCELLED,
  SERVER_CANCELLED,
} from "../wires/jsonrpc/error_codes.ts";

/**
 * Options for {@linkcode openJsonRpc}.
 *
 * @typeParam Local The handler object this side serves.
 */
export interface JsonRpcOptions<Local extends object = object> {
  /** `"content-length"` for LSP (`Content-Length: N\r\n\r\n` headers), `"ndjson"` for MCP. */
  framing: "content-length" | "ndjson";
  /**
   * Cancellation and progress conventions: `"lsp"` (`$/cancelRequest`, `$/progress`),
   * `"mcp"` (`notifications/cancelled`, `notifications/progress`) or your own.
   *
   * @default {"lsp"} with `content-length` framing, `"mcp"` with `ndjson`
   */
  dialect?: "lsp" | "mcp" | JsonRpcDialect;
  /**
   * Send values JSON would change as JSON changes them (a `Map` as `{}`, `NaN` as `null`, …)
   * instead of failing with a `CodecError` that names the value's path (a result: the call
   * is answered with that error; a param: the call rejects): the JSON codec's `lossy`
   * option (`jsonCodec({ lossy: true })`).
   *
   * @default {false}
   */
  lossy?: boolean;
  /**
   * Which end of the connection this is. A `"client"` never answers what it cannot tie to a
   * request — output that is not JSON, a message that is no request and has no id — and
   * only reports it to `onProtocolError`, as vscode-jsonrpc and the MCP SDKs do: a server
   * writing junk to its stdout would otherwise get `{"id":null,"error":…}`, which an MCP
   * server may fail to parse (mcp 1.30 answers it with an error of its own). A `"server"`
   * answers them (-32700, -32600 with id null) as JSON-RPC says; so does a channel with no
   * role. The role also names the peer when the connection ends ("The server closed the
   * connection").
   *
   * @default {"client"} when `transport` is a child process (`spawnTransport`,
   * `childTransport`: this side started the server), else none
   */
  role?: "client" | "server";
  /**
   * The requests and notifications this side serves, by method name: each handler gets the
   * params (an object or an array, as sent) and a `CallContext` whose `signal` fires when
   * the peer cancels.
   */
  handlers?: Local;
  /**
   * Serves every request no handler serves (vscode-jsonrpc's star request handler): gets the
   * method, the params and the call's context; what it returns or throws is the answer (throw
   * an error with `code: -32601` to say the method is unknown). Without it such a request is
   * answered -32601.
   */
  onRequest?: (method: string, params: unknown, ctx: CallContext) => unknown;
  /**
   * Told of every notification no handler serves (vscode-jsonrpc's
   * `onUnhandledNotification`); without it they are dropped, as LSP and MCP allow. What it
   * throws goes to `onNotificationError`.
   */
  onUnhandledNotification?: (method: string, params: unknown) => void;
  /** The largest message accepted (and sent), in bytes. @default {67108864} (64 MiB) */
  maxFrameBytes?: number;
  /**
   * How many requests each side keeps in flight. The peer's requests past it are held and run
   * in order as slots free; reading goes on for 1 MiB past the first held one (then waits for
   * them), so that the answer a running handler waits for, or a cancel of a held request
   * (answered as cancelled, never run), is not stuck behind them. @default {1024}
   */
  maxInFlight?: number;
  /**
   * The most requests and notifications one batch received may hold. A larger batch is
   * refused whole with one error response (-32600, id null, its message naming this limit)
   * and none of it runs; the connection goes on. `0` refuses every batch (MCP dropped
   * batches in its 2025-06-18 revision). A batch within the limit is answered as one array
   * once every request in it is (an answer that would take that array past `maxFrameBytes`
   * is replaced by a -32603 error); requests past `maxInFlight` wait their turn in order.
   *
   * @default {1000} ({@linkcode DEFAULT_MAX_BATCH_MESSAGES})
   */
  maxBatchMessages?: number;
  /** The deadline of a call that sets no `timeout`, in ms. @default {60000} */
  defaultTimeout?: number;
  /** How long `close()` lets calls in flight finish, in ms. @default {5000} */
  drainTimeout?: number;
  /** Bytes queued for the peer at which `ready` waits. @default {1048576} */
  writeHighWaterMark?: number;
  /** Whether errors sent carry their stack (in `data.stack`). @default {false} */
  trustPeer?: boolean;
  /** Called when a notification handler throws. @default logs with `console.error` */
  onNotificationError?: (error: unknown, method: string) => void;
  /**
   * Told of what the peer sent wrong that the connection survives: a message that is not
   * JSON, an invalid request, a response to no request in flight.
   *
   * @default logs with `console.warn`
   */
  onProtocolError?: (error: ProtocolError) => void;
  /**
   * The wire trace: one line per message sent (→) or received (←), with its kind, id, method,
   * size, text (cut) and a response's time since its request; `true` writes to stderr
   * (ChannelOptions.trace; `CONDUIT_TRACE=1` turns it on too).
   *
   * @default off, unless `CONDUIT_TRACE` is set
   */
  trace?: boolean | ((line: string) => void);
  /**
   * Code around every request this side sends and serves (see `Interceptor`). Headers they
   * add travel in `params._meta` where the dialect has one (MCP), and are read from it.
   *
   * @default none
   */
  interceptors?: readonly Interceptor[];
}

/** What the helper functions need of a channel openJsonRpc opened. */
interface JsonRpcState {
  readonly dialect: JsonRpcDialect;
  readonly table: HandlerTable;
  readonly outbox: JsonRpcOutbox;
}

const channels = new WeakMap<object, JsonRpcState>();

/**
 * Opens a JSON-RPC 2.0 channel over `transport`. There is no handshake: it is open at once
 * (the returned promise resolves in the same turn); what a protocol says to do first (LSP's
 * `initialize`, MCP's `initialize`) is a call like any other.
 *
 * @typeParam Remote The methods the peer serves (an interface; method names like
 * `"textDocument/hover"` are quoted members).
 * @typeParam Local The handler object this side serves (inferred from `handlers`).
 * @param transport The connection; the channel owns and closes it (`spawnTransport` from
 * `@conduit/ipc/transports/stdio` for a child process).
 * @param options Framing, dialect, handlers and limits.
 * @returns The open channel.
 * @throws {RangeError} When a limit is out of range.
 *
 * @example Cancelling a call sends the dialect's cancel notification
 * ```ts
 * import { type CallContext } from "@conduit/ipc/channel";
 * import { openJsonRpc } from "@conduit/ipc/jsonrpc";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * let stopped: unknown;
 * const [a, b] = memoryPair();
 * const server = await openJsonRpc(a, {
 *   framing: "ndjson",
 *   dialect: "mcp",
 *   handlers: {
 *     wait: (_: object, ctx: CallContext) =>
 *       new Promise((_, reject) => ctx.signal.addEventListener("abort", () => {
 *         stopped = ctx.signal.reason;
 *         reject(ctx.signal.reason);
 *       })),
 *   },
 * });
 * const client = await openJsonRpc<{ wait(p: object): void }>(b, { framing: "ndjson" });
 * const controller = new AbortController();
 * const call = client.remote.wait({}, { signal: controller.signal });
 * setTimeout(() => controller.abort(new Error("enough")), 10);
 * await assert.rejects(call, { message: "enough" });
 * await client.close();
 * await server.close();
 * assert.equal((stopped as Error).name, "CallCancelledError");
 * ```
 */
export async function openJsonRpc<
  Remote extends object = Record<string, never>,
  Local extends CheckedHandlers<Local> = object,
>(transport: Transport, options: JsonRpcOptions<Local>): Promise<Channel<Remote>> {
  return await openOn(transport, () => jsonRpcChannel<Remote, Local>(transport, options));
}

/** The channel openJsonRpc opens, not open yet. */
function jsonRpcChannel<Remote extends object, Local extends CheckedHandlers<Local>>(
  transport: Transport,
  options: JsonRpcOptions<Local>,
): Channel<Remote> {
  const framing = options.framing;
  if (framing !== "content-length" && framing !== "ndjson") {
    throw new TypeError(`framing must be "content-length" or "ndjson", got ${String(framing)}`);
  }
  const dialect = resolveDialect(options.dialect ?? (framing === "ndjson" ? "mcp" : "lsp"));
  const maxBatchMessages = integerOption(
    "maxBatchMessages",
    options.maxBatchMessages ?? DEFAULT_MAX_BATCH_MESSAGES,
    0,
  );
  const role = options.role ?? (isChildProcess(transport) ? "client" : undefined);
  if (role !== undefined && role !== "client" && role !== "server") {
    throw new TypeError(`role must be "client" or "server", got ${JSON.stringify(role)}`);
  }
  const onNotificationError = notificationErrorReporter(options.onNotificationError);
  const table = new HandlerTable(options.handlers, options.onRequest);
  const unhandled = options.onUnhandledNotification;
  const factory = jsonRpcWire({
    framing,
    dialect,
    role,
    serves: (method) => table.serves(method),
    onUnhandledNotification: unhandled && ((method, params) => {
      try {
        unhandled(method, params);
      } catch (error) {
        onNotificationError(error, method);
      }
    }),
    maxBatchMessages,
    lossy: options.lossy ?? false,
    onProtocolError: options.onProtocolError ?? warnProtocolError,
  });
  let made: JsonRpcWire | undefined;
  const wire: WireFactory = (transport, wireOptions) =>
    made = factory(transport, wireOptions) as JsonRpcWire;
  // The channel's own options pass through as they are; the wire's are taken out.
  const {
    framing: _,
    dialect: __,
    onProtocolError: ___,
    maxBatchMessages: ____,
    role: _____,
    onRequest: ______,
    onUnhandledNotification: _______,
    handlers: ________,
    lossy,
    ...channelOptions
  } = options;
  const channel = new Channel<Remote>(
    transport,
    {
      ...channelOptions,
      onNotificationError,
      handlers: table.handlers as Local,
      codec: jsonCodec({ lossy: lossy ?? false }),
    } satisfies ChannelOptions<Local>,
    wire,
  );
  channels.set(channel, { dialect, table, outbox: made!.outbox });
  return channel;
}

/**
 * Serves `method` on a JSON-RPC channel from now on (a request or a notification of that
 * name), in place of any handler it had; returns what stops it. Handlers given at open are
 * served the same way, so `handle` also replaces one of them.
 *
 * @param channel The JSON-RPC channel.
 * @param method The method's name.
 * @param handler Gets the params and the call's context, like a handler given at open.
 * @returns Stops serving `method` with `handler` (nothing, if another replaced it since).
 * @throws {TypeError} When `channel` was not opened with {@linkcode openJsonRpc}, or
 * `handler` is not a function.
 *
 * @example A handler added after open, then removed
 * ```ts
 * import { handle, openJsonRpc } from "@conduit/ipc/jsonrpc";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * const [a, b] = memoryPair();
 * const server = await openJsonRpc(a, { framing: "ndjson" });
 * const client = await openJsonRpc<{ twice(p: [number]): number }>(b, { framing: "ndjson" });
 * const stop = handle(server, "twice", ([n]: [number]) => 2 * n);
 * assert.equal(await client.remote.twice([21]), 42);
 * stop();
 * await assert.rejects(client.remote.twice([1]), { name: "RemoteError", code: -32601 });
 * await Promise.all([client.close(), server.close()]);
 * ```
 */
export function handle(
  channel: object,
  method: string,
  handler: (params: never, ctx: CallContext) => unknown,
): () => void {
  return stateOf(channel).table.add(method, handler);
}

/**
 * Sends as one JSON-RPC batch (an array) the requests and notifications `send` starts on
 * `channel` before it returns: calls through `channel.remote` or `channel.call`, and
 * `channel.notify`. Each call keeps its own promise, deadline and signal, and the peer's
 * answers settle them as they come (a server answers a batch with an array, or one by one).
 * What `send` returns is returned, so it can hand back the calls' promises, typed by the
 * remote. A call that waits for a slot (past `maxInFlight`) leaves on its own once one is
 * free; messages that would take the array past `maxFrameBytes` leave in a second array.
 * Nothing is sent for an empty batch.
 *
 * @typeParam T What `send` returns.
 * @param channel The JSON-RPC channel.
 * @param send Starts the calls and notifications of the batch; it must not await between
 * them (what it sends after its first `await` is no longer in the batch).
 * @returns What `send` returned.
 * @throws {TypeError} When `channel` was not opened with {@linkcode openJsonRpc}; what `send`
 * throws (the messages it sent before still leave, as a batch).
 *
 * @example Two requests and a notification in one array
 * ```ts
 * import { openJsonRpc, sendBatch } from "@conduit/ipc/jsonrpc";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * interface Server {
 *   add(p: [number, number]): number;
 *   greet(p: { name: string }): string;
 *   log(p: [string]): void;
 * }
 * const logged: string[] = [];
 * const [a, b] = memoryPair();
 * const server = await openJsonRpc(a, {
 *   framing: "ndjson",
 *   handlers: {
 *     add: ([x, y]: [number, number]) => x + y,
 *     greet: ({ name }: { name: string }) => `hello ${name}`,
 *     log: ([line]: [string]) => void logged.push(line),
 *   } satisfies Server,
 * });
 * const client = await openJsonRpc<Server>(b, { framing: "ndjson" });
 * const [sum, greeting] = sendBatch(client, () => {
 *   client.notify("log", ["batched"]);
 *   return [client.remote.add([1, 2]), client.remote.greet({ name: "you" })] as const;
 * });
 * assert.equal(await sum, 3);
 * assert.equal(await greeting, "hello you");
 * assert.deepEqual(logged, ["batched"]);
 * await Promise.all([client.close(), server.close()]);
 * ```
 */
export function sendBatch<T>(channel: object, send: () => T): T {
  return stateOf(channel).outbox.sendBatch(send);
}

/**
 * Sends a progress notification from a handler: `$/progress` `{ token, value }` on an LSP
 * channel, `notifications/progress` `{ progressToken, ...value }` on an MCP one. The token is
 * the one the request carried (LSP's `workDoneToken`, MCP's `_meta.progressToken`); a
 * request without one asked for no progress, and nothing is sent.
 *
 * @param channel The JSON-RPC channel (a handler's `ctx.channel`).
 * @param token The request's progress token (see {@linkcode progressToken}).
 * @param value What to report (for MCP: `{ progress, total?, message? }`).
 * @throws {TypeError} When `channel` was not opened with {@linkcode openJsonRpc}.
 *
 * @example
 * ```ts
 * import { type CallContext } from "@conduit/ipc/channel";
 * import { openJsonRpc, progressToken, sendProgress } from "@conduit/ipc/jsonrpc";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * const [a, b] = memoryPair();
 * const server = await openJsonRpc(a, {
 *   framing: "ndjson",
 *   handlers: {
 *     work(params: object, ctx: CallContext) {
 *       for (let i = 1; i <= 3; i++) {
 *         sendProgress(ctx.channel, progressToken(ctx.channel, params), { progress: i, total: 3 });
 *       }
 *       return "done";
 *     },
 *   },
 * });
 * const client = await openJsonRpc<{ work(p: object): string }>(b, { framing: "ndjson" });
 * const seen: unknown[] = [];
 * assert.equal(await client.remote.work({}, { onProgress: (v) => seen.push(v) }), "done");
 * assert.deepEqual(seen.map((v) => (v as { progress: number }).progress), [1, 2, 3]);
 * await Promise.all([client.close(), server.close()]);
 * ```
 */
export function sendProgress(channel: object, token: JsonRpcId | undefined, value: unknown): void {
  const dialect = dialectOf(channel);
  if (token === undefined) return;
  (channel as Notifier).notify(dialect.progress.method, dialect.progress.param(token, value));
}

interface Notifier {
  notify(method: string, param: unknown): void;
}

/**
 * The progress token a request's params carry on this channel (LSP's `workDoneToken`,
 * MCP's `_meta.progressToken`), or undefined.
 *
 * @param channel The JSON-RPC channel (a handler's `ctx.channel`).
 * @param params The request's params.
 * @returns The token, or undefined when the caller asked for no progress.
 * @throws {TypeError} When `channel` was not opened with {@linkcode openJsonRpc}.
 *
 * @example
 * ```ts
 * import { openJsonRpc, progressToken } from "@conduit/ipc/jsonrpc";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * const channel = await openJsonRpc(memoryPair()[0], { framing: "ndjson" });
 * assert.equal(progressToken(channel, { _meta: { progressToken: 7 } }), 7);
 * assert.equal(progressToken(channel, {}), undefined);
 * await channel.abort();
 * ```
 */
export function progressToken(channel: object, params: unknown): JsonRpcId | undefined {
  return dialectOf(channel).progress.tokenOf(params);
}

function dialectOf(channel: object): JsonRpcDialect {
  return stateOf(channel).dialect;
}

function stateOf(channel: object): JsonRpcState {
  const state = channels.get(channel);
  if (state === undefined) {
    throw new TypeError("Not a JSON-RPC channel: open it with openJsonRpc()");
  }
  return state;
}

function resolveDialect(dialect: "lsp" | "mcp" | JsonRpcDialect): JsonRpcDialect {
  if (dialect === "lsp") return LSP_DIALECT;
  if (dialect === "mcp") return MCP_DIALECT;
  if (typeof dialect !== "object" || dialect === null) {
    throw new TypeError(`dialect must be "lsp", "mcp" or an object, got ${String(dialect)}`);
  }
  return dialect;
}

/** Whether `transport` is a child process this side started (it has a pid and an exit status). */
function isChildProcess(transport: Transport): boolean {
  return "pid" in transport && "status" in transport;
}

function warnProtocolError(error: ProtocolError): void {
  console.warn(`conduit: JSON-RPC: ${error.message}`);
}
