/**
 * The types that connect a handler object to its remote view: what a handler receives
 * (`CallContext`, in call_context.ts), what a caller passes ({@linkcode CallOptions}) and how an
 * interface of handlers maps to the methods a peer can call ({@linkcode RemoteOf}).
 *
 * @example
 * ```ts
 * import type { CallContext, RemoteOf, RemoteStream } from "@conduit/ipc/channel";
 *
 * interface Calc {
 *   add(param: { a: number; b: number }, ctx?: CallContext): number;
 *   count(to: number): AsyncIterable<number>;
 * }
 * type View = RemoteOf<Calc>;
 * const check: [ReturnType<View["add"]>, ReturnType<View["count"]>] = [] as unknown as [
 *   Promise<number>,
 *   RemoteStream<number>,
 * ];
 * void check;
 * ```
 *
 * @module
 */

/** Per-call options a caller passes as the second argument of a remote method. */
export interface CallOptions {
  /**
   * Aborting it rejects the call with the signal's reason and cancels it remotely: at once,
   * except that a call whose param is the caller's own bytes (raw codec, larger than a write
   * batch) still being written settles once they are written, so they stay unchanged until
   * the call settles.
   */
  signal?: AbortSignal;
  /**
   * The call's deadline in milliseconds; `Infinity` for none. The handler's signal fires when
   * it passes, and the call rejects with `DeadlineExceededError`.
   *
   * @default {ChannelOptions.defaultTimeout} (`DEFAULT_CALL_TIMEOUT`, 60 s)
   */
  timeout?: number;
  /**
   * Receives the progress reports the peer sends about this call: JSON-RPC channels only
   * (`$/progress` for LSP, `notifications/progress` for MCP; the channel puts the progress
   * token in the param). A conduit channel never calls it.
   */
  onProgress?: (value: unknown) => void;
  /**
   * The caller's stable name for this call, sent so the handler sees it as `ctx.key`: keep it
   * the same when you send the call again, and the handler can tell a retry from a new call.
   * 1 to 128 characters. Pools set one on the calls they retry. Sent only to a peer that reads
   * call meta (conduit does; JSON-RPC has none), else left out.
   */
  key?: string;
  /**
   * Which attempt of the call this is, seen by the handler as `ctx.attempt`: an integer >= 1.
   *
   * @default {1}
   */
  attempt?: number;
  /**
   * Strings sent with the call (a request id, a trace context…), seen by the handler as
   * `ctx.headers`: at most 32, each name 1 to 64 of `a-z`, `0-9`, `-`, `_`, `.` (starting with a
   * letter or digit) and each value up to 1024 printable ASCII characters, the call's whole
   * meta at most 4096 bytes (docs/protocol.md §6, "Call meta"); else the call rejects with a
   * RangeError. Interceptors may add more. Sent only to a peer that reads call meta, like
   * `key`.
   */
  headers?: Readonly<Record<string, string>>;
}

/**
 * A result stream from the peer: iterate it with `for await`, or use {@linkcode readable}.
 * Breaking out of the loop or calling {@linkcode cancel} cancels the remote producer (its
 * `finally` runs). Items are pulled with credit-based flow control, so a slow consumer bounds
 * what the producer sends.
 *
 * @typeParam T The items.
 */
export interface RemoteStream<T> extends AsyncIterable<T> {
  /** The same stream as a `ReadableStream` (created on first access). */
  readonly readable: ReadableStream<T>;
  /** Stops the stream and cancels the remote producer. */
  cancel(reason?: unknown): Promise<void>;
}

/** Any handler function: every function is assignable to it, whatever its parameters. */
export type AnyHandler = (...args: never[]) => unknown;

/** The param a caller passes for handler `F` (a handler's `AsyncIterable` param takes a stream). */
export type ParamOf<F> = F extends (...args: infer A) => unknown ? A extends [] ? undefined
  : A[0]
  : never;

/** What the caller gets for a handler returning `R`: a stream for async iterables, else a promise. */
export type RemoteReturn<R> = [Awaited<R>] extends [never] ? Promise<never>
  : Awaited<R> extends AsyncIterable<infer Item> ? RemoteStream<Item>
  : Promise<Awaited<R>>;

/** The arguments of a remote method: the param (optional when it may be undefined) and options. */
export type RemoteArgs<F> = undefined extends ParamOf<F>
  ? [param?: ParamOf<F>, options?: CallOptions]
  : [param: ParamOf<F>, options?: CallOptions];

/**
 * The remote method for handler `F` (named `K`). A handler that takes more than its param and
 * a `CallContext` cannot be called: its remote method takes only the
 * {@linkcode HandlerTakesOneParam} message, so a call names the method and the rule.
 */
export type RemoteMethod<F, K extends string = string> = F extends (...args: infer _A) => infer R
  ? IsOneParamHandler<F> extends true ? (...args: RemoteArgs<F>) => RemoteReturn<R>
  : (...args: [HandlerTakesOneParam<K>, ...unknown[]]) => never
  : never;

/**
 * The compile-time error for handler `K` when it declares more than its param and a
 * `CallContext`: a handler takes one param, so several values travel as one object.
 *
 * @example
 * ```ts
 * import type { HandlerTakesOneParam } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * const message: HandlerTakesOneParam<"add"> =
 *   'Handler "add" takes one param (and an optional CallContext): pass several values as one object, e.g. add({ a, b })';
 * assert.match(message, /"add" takes one param/);
 * ```
 */
export type HandlerTakesOneParam<K extends string> =
  `Handler "${K}" takes one param (and an optional CallContext): pass several values as one object, e.g. ${K}({ a, b })`;

/**
 * `T` with each handler that takes more than one param (besides an optional `CallContext`)
 * replaced by its {@linkcode HandlerTakesOneParam} message: `handlers: H & CheckedHandlers<H>`
 * makes such a handler a compile-time error that names it.
 */
export type CheckedHandlers<T> = {
  [K in keyof T]: IsOneParamHandler<T[K]> extends true ? T[K]
    : HandlerTakesOneParam<K & string>;
};

/**
 * `true` when `F` (if a function) takes at most its param and a `CallContext` (anything with
 * the context's `method` and `signal`), else `false`: the rule {@linkcode CheckedHandlers}
 * and {@linkcode RemoteOf} apply.
 */
export type IsOneParamHandler<F> = F extends (...args: infer A) => unknown
  ? A extends readonly [unknown?] ? true
  : A extends readonly [unknown?, (infer C)?]
    ? [NonNullable<C>] extends [{ readonly method: string; readonly signal: AbortSignal }] ? true
    : false
  : false
  : true;

/** The names of `T`'s handler methods. */
export type MethodName<T> = {
  [K in keyof T]: K extends string ? T[K] extends AnyHandler ? K : never : never;
}[keyof T];

/**
 * The remote view of a peer that serves handlers of type `T`: each handler
 * `(param, ctx) => R` becomes `(param, options?) => Promise<R>`, and each handler returning an
 * `AsyncIterable<I>` becomes `(param, options?) => RemoteStream<I>`.
 *
 * @typeParam T The peer's handler interface.
 */
export type RemoteOf<T> = { readonly [K in MethodName<T>]: RemoteMethod<T[K], K> };

/** A call as a caller-side interceptor sees it (see {@linkcode Interceptor.call}). */
export interface OutgoingCallInfo {
  /** The method called. */
  readonly method: string;
  /** The param; an interceptor may replace it before calling `next`. */
  param: unknown;
  /**
   * The headers the call will carry to the handler (`ctx.headers`): the caller's `headers`
   * option, copied; an interceptor may add, change or delete entries before calling `next`.
   */
  readonly headers: Record<string, string>;
  /** The caller's options for this call (signal, timeout, key, attempt). */
  readonly options: Readonly<CallOptions>;
}

/** A call as a handler-side interceptor sees it (see {@linkcode Interceptor.handle}). */
export interface IncomingCallInfo {
  /** The method called. */
  readonly method: string;
  /** The decoded param (the stream, when the param is one); an interceptor may replace it. */
  param: unknown;
  /** The handler's context: its headers, signal, deadline, key, attempt and channel. */
  readonly context: CallDetails & { readonly channel: object };
}

/**
 * Code around every call a channel makes and every call it serves: logging, metrics, tracing,
 * authorization, headers. Each function receives the call and `next`, which runs the rest of
 * the chain (the later interceptors, then the call itself or the handler) and resolves with
 * its result; what the function resolves with is the call's result, and what it throws is the
 * call's error (a typed error reaches the caller as that error on its side, as a
 * `RemoteError` from the handler's side). A result that is a stream is a
 * {@linkcode RemoteStream} on the caller's side and an `AsyncIterable` on the handler's: wrap
 * it to see its items. The first interceptor of the list is the outermost. Deadlines,
 * cancellation and call options keep working through them; notifications are not
 * intercepted.
 *
 * @example Adding a header on one side and reading it on the other
 * ```ts
 * import { type CallContext, type Interceptor, openChannel } from "@conduit/ipc/channel";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * const tag: Interceptor = {
 *   call: (call, next) => {
 *     call.headers["x-request-id"] = "r-1";
 *     return next(call);
 *   },
 * };
 * const seen: string[] = [];
 * const log: Interceptor = {
 *   handle: async (call, next) => {
 *     seen.push(`${call.method} ${call.context.headers["x-request-id"]}`);
 *     return await next(call);
 *   },
 * };
 * const handlers = { echo: (text: string, _ctx: CallContext) => text };
 * const [a, b] = memoryPair();
 * const [server, client] = await Promise.all([
 *   openChannel(a, { handlers, interceptors: [log] }),
 *   openChannel<typeof handlers>(b, { interceptors: [tag] }),
 * ]);
 * assert.equal(await client.remote.echo("hi"), "hi");
 * assert.deepEqual(seen, ["echo r-1"]);
 * await Promise.all([client.close(), server.close()]);
 * ```
 */
export interface Interceptor {
  /** Around each call this side makes. */
  call?(
    call: OutgoingCallInfo,
    next: (call: OutgoingCallInfo) => Promise<unknown>,
  ): Promise<unknown>;
  /** Around each call this side serves (its handler). */
  handle?(
    call: IncomingCallInfo,
    next: (call: IncomingCallInfo) => Promise<unknown>,
  ): Promise<unknown>;
}

/** What a handler's context says about its call (`CallContext` adds the channel). */
export interface CallDetails {
  /** The method being served. */
  readonly method: string;
  /**
   * Fires on cancellation (`CallCancelledError`), deadline (`DeadlineExceededError`) or
   * connection loss (`ConnectionClosedError`); its `reason` says which.
   */
  readonly signal: AbortSignal;
  /** The deadline as a `Date.now()` timestamp, or `undefined` when the caller set none. */
  readonly deadline: number | undefined;
  /**
   * The caller's stable name for this call, the same on each of its attempts (its `key` call
   * option; pools set one on retryable calls), or `undefined`: what a handler de-duplicates by.
   */
  readonly key: string | undefined;
  /** Which attempt of the call this is: 1 for the first, 2 for the first retry, … */
  readonly attempt: number;
  /**
   * The headers the caller sent with the call (its `headers` call option and what its
   * interceptors added), or an empty object: read-only.
   */
  readonly headers: Readonly<Record<string, string>>;
}
