// A channel's calls through its interceptors' `call` functions (see `Interceptor` in
// types.ts): the chain runs first to last, the last `next` starts the call on the channel, and
// the call object is a promise and a stream of what the chain resolves with. The object is
// over once the chain settled and every call the chain made is over, so a pool counts an
// intercepted call until its stream ends.
//
// The calls the chain makes live no longer than the intercepted call, as a Go context's do: once
// the chain settled with a value or an error, or the stream it returned was read or cancelled,
// those still in flight are cancelled (a hedge's loser holds no slot and no work on the peer)
// and those it starts later start cancelled. A stream the chain returned is left running: a
// call's own stream keeps its call (the others are cancelled at once), a stream an interceptor
// made keeps them all until the caller is done with it.

import { ConduitError } from "../errors.ts";
import { fireAt } from "../_runtime.ts";
import { DeadlineExceededError } from "./errors.ts";
import {
  type CallResult,
  DualCall,
  type Invoke,
  type OverListener,
  type Overseeable,
  StreamView,
} from "./_remote.ts";
import type { CallOptions, Interceptor, OutgoingCallInfo } from "./types.ts";

/** Starts a call on the channel itself, below every interceptor. */
export type DirectInvoke = (
  method: string,
  param: unknown,
  options: CallOptions | undefined,
) => CallResult;

/**
 * The `invoke` of a remote whose calls pass through the `call` functions of `interceptors`;
 * `direct` itself when none has one.
 */
export function interceptedInvoke(
  interceptors: readonly Interceptor[] | undefined,
  direct: DirectInvoke,
): Invoke {
  const chain = interceptors?.filter((interceptor) => interceptor.call !== undefined) ?? [];
  if (chain.length === 0) return direct;
  return (method, param, options) => new InterceptedCall(chain, direct, method, param, options);
}

/** A call the chain made: its outcome (a value, or a view of its stream), and how it ended. */
type Made = { call: CallResult; view: unknown; ok: boolean; error: unknown };

/**
 * A call made through interceptors: a promise and a stream of what the chain resolves with.
 * It is over (see `whenOver`) once the chain settled and every call the chain made is over.
 */
class InterceptedCall extends DualCall implements Overseeable {
  readonly #method: string;
  readonly #result: Promise<unknown>;
  /** Whether the caller reads the stream the chain resolved with. */
  #reading = false;
  readonly #cancel = new AbortController();
  /** Calls the chain started that are not over yet, plus one until the chain settles. */
  #open = 1;
  /** How the chain ended: its value (or error), and each call it made with how that ended. */
  #chain: { ok: boolean; value: unknown } | undefined;
  readonly #calls: Made[] = [];
  #overListeners: OverListener[] | undefined = [];
  /** Stops passing the caller's signal on to the call (see `#letGo`). */
  #unlisten: (() => void) | undefined;
  /** Over for the calls the chain makes: one it starts now starts cancelled (see `#end`). */
  #ended = false;

  constructor(
    chain: readonly Interceptor[],
    direct: DirectInvoke,
    method: string,
    param: unknown,
    options: CallOptions | undefined,
  ) {
    super();
    this.#method = method;
    // The caller's signal is passed on to the call's own, not joined with it: the caller's may
    // outlive many calls (a service's shutdown signal), and listening to it would keep each
    // call, its result included, as long as it lives. `#letGo` stops listening.
    const signal = this.#cancel.signal;
    const callerSignal = options?.signal;
    if (callerSignal?.aborted) this.#cancel.abort(callerSignal.reason);
    else if (callerSignal !== undefined) {
      const pass = () => this.#cancel.abort(callerSignal.reason);
      callerSignal.addEventListener("abort", pass, { once: true });
      this.#unlisten = () => callerSignal.removeEventListener("abort", pass);
    }
    // The caller's timeout counts from now, whatever an interceptor does before next().
    const timeout = options?.timeout;
    const deadline = timeout === undefined || !(timeout < Infinity)
      ? Infinity
      : performance.now() + timeout;
    const last = (call: OutgoingCallInfo): Promise<unknown> => {
      const headers = call.headers;
      let any = false;
      for (const _ in headers) any = true;
      const callTimeout = deadline !== Infinity && call.options.timeout === timeout
        ? Math.max(1, deadline - performance.now())
        : call.options.timeout;
      if (this.#ended && !signal.aborted) this.#cancel.abort(this.#overReason());
      const inner = direct(call.method, call.param, {
        ...call.options,
        signal,
        timeout: callTimeout,
        headers: any ? headers : undefined,
      });
      this.#open++;
      const outcome = inner.either();
      const made: Made = { call: inner, view: undefined, ok: true, error: undefined };
      this.#calls.push(made);
      outcome.then((value) => made.view = value, () => {});
      inner.whenOver((ok, error) => {
        made.ok = ok;
        made.error = error;
        this.#closeOne();
      });
      return outcome;
    };
    const run = (index: number, call: OutgoingCallInfo): Promise<unknown> => {
      if (index === chain.length) return last(call);
      try {
        return Promise.resolve(chain[index].call!(call, (next) => run(index + 1, next)));
      } catch (error) {
        return Promise.reject(error);
      }
    };
    const chained = run(0, {
      method,
      param,
      headers: { ...options?.headers },
      options: options ?? {},
    });
    // The caller's signal and deadline end the call while an interceptor holds it, too: the
    // calls the chain makes later start cancelled.
    const unarm = fireAt(
      deadline,
      () => this.#cancel.abort(new DeadlineExceededError(method, timeout!)),
    );
    const stopped = new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason);
      else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
    // Stopped, the call's stream is read by nobody (unless it is being read): close it, so
    // that an interceptor that wrapped it (to see it end, as telemetry does) learns it is over.
    stopped.catch(() => chained).then((value) => {
      if (!this.#reading && isStream(value)) closeUnread(value);
    }).catch(() => {});
    this.#result = Promise.race([chained, stopped]);
    const settle = (ok: boolean, value: unknown): void => {
      unarm();
      this.#chain = { ok, value };
      this.#closeOne();
      if (!ok || !isStream(value)) this.#end();
      else if (this.#calls.some((made) => made.view === value)) this.#end(value);
    };
    // Unread, its failure goes unnoticed, as a plain call's does.
    this.#result.then((value) => settle(true, value), (error) => settle(false, error));
  }

  /**
   * Cancels the calls the chain made that are still in flight, but the one whose stream is
   * `keep`; without `keep`, those it makes later too.
   */
  #end(keep?: unknown): void {
    if (keep === undefined) this.#ended = true;
    // Once the chain settled, #open counts the calls in flight: most often none is.
    if (this.#open <= (keep === undefined ? 0 : 1)) return;
    const over = this.#overReason();
    if (keep === undefined) return this.#cancel.abort(over);
    for (const made of this.#calls) if (made.view !== keep) made.call.cancel(over).catch(() => {});
  }

  #overReason(): ConduitError {
    return new ConduitError(`The call to "${this.#method}" is over`);
  }

  whenOver(listener: OverListener): void {
    const listeners = this.#overListeners;
    if (listeners === undefined) listener(...this.#outcome());
    else listeners.push(listener);
  }

  /** The chain's outcome; for a stream it returned, the outcome of the call that streamed it. */
  #outcome(): [boolean, unknown] {
    const chain = this.#chain!;
    if (!chain.ok) return [false, chain.value];
    const value = chain.value;
    if (!isStream(value)) return [true, undefined];
    // The stream of a call the chain made, or a stream an interceptor made around one.
    const streamed = this.#calls.find((made) => made.view === value) ??
      this.#calls.findLast((made) => made.view instanceof StreamView);
    return streamed !== undefined ? [streamed.ok, streamed.error] : [true, undefined];
  }

  #closeOne(): void {
    if (--this.#open > 0) return;
    const listeners = this.#overListeners;
    this.#overListeners = undefined;
    this.#letGo();
    const [ok, error] = this.#outcome();
    for (const listener of listeners ?? []) listener(ok, error);
  }

  /**
   * Stops listening to the caller's signal once nothing is left for it to stop: the call is
   * over and its outcome is a value, or a stream being read (one read by nobody is closed when
   * the signal fires).
   */
  #letGo(): void {
    if (this.#overListeners !== undefined || this.#unlisten === undefined) return;
    if (!this.#reading && isStream(this.#chain!.value)) return;
    this.#unlisten();
    this.#unlisten = undefined;
  }

  then<R1 = unknown, R2 = never>(
    onfulfilled?: ((value: unknown) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    const method = this.#method;
    return this.#result.then((value) => {
      if (isStream(value)) {
        const error = new ConduitError(
          `"${method}" returned a stream: iterate it instead of awaiting it`,
        );
        // Closed once stopped; a stream an interceptor made around the call's may never have
        // started: cancel the calls the chain made themselves.
        this.#cancel.abort(error);
        throw error;
      }
      return value;
    }).then(onfulfilled, onrejected);
  }

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    return this.#read();
  }

  async *#read(): AsyncGenerator<unknown> {
    const value = await this.#result;
    if (!isStream(value)) {
      throw new ConduitError(
        `"${this.#method}" returned a single value, not a stream: await it instead`,
      );
    }
    this.#reading = true;
    this.#letGo();
    try {
      yield* value;
    } finally {
      // Read to its end, or left: the calls the chain started beside the stream end with it.
      this.#end();
    }
  }

  protected cancelUnread(reason: unknown): Promise<void> {
    this.#cancel.abort(
      reason ?? new ConduitError(`The call to "${this.#method}" was cancelled`),
    );
    return Promise.resolve();
  }
}

/** Closes a stream nobody will read: a call's, or one an interceptor made around it. */
function closeUnread(stream: AsyncIterable<unknown>): void {
  if (stream instanceof StreamView) void stream.cancel();
  else void Promise.resolve(stream[Symbol.asyncIterator]().return?.()).catch(() => {});
}

function isStream(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === "object" && value !== null && Symbol.asyncIterator in value;
}
