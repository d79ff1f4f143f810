// A channel's calls through its interceptors' `call` functions (see `Interceptor` in
// types.ts): the chain runs first to last, the last `next` starts the call on the channel, and
// the call object is a promise and a stream of what the chain resolves with. The object is
// over once the chain settled and every call the chain made is over, so a pool counts an
// intercepted call until its stream ends.

import { ConduitError } from "../errors.ts";
import { timerDelay } from "../_runtime.ts";
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
  readonly #calls: { view: unknown; ok: boolean; error: unknown }[] = [];
  #overListeners: OverListener[] | undefined = [];
  /** Stops passing the caller's signal on to the call (see `#letGo`). */
  #unlisten: (() => void) | undefined;

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
      const inner = direct(call.method, call.param, {
        ...call.options,
        signal,
        timeout: callTimeout,
        headers: any ? headers : undefined,
      });
      this.#open++;
      const outcome = inner.either();
      const made = { view: undefined as unknown, ok: true, error: undefined as unknown };
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
    let timer: ReturnType<typeof setTimeout> | undefined;
    if (deadline !== Infinity) {
      timer = setTimeout(
        () => this.#cancel.abort(new DeadlineExceededError(method, timeout!)),
        timerDelay(deadline - performance.now()),
      );
    }
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
    // Unread, its failure goes unnoticed, as a plain call's does.
    this.#result.then(
      (value) => {
        clearTimeout(timer);
        this.#chain = { ok: true, value };
        this.#closeOne();
      },
      (error) => {
        clearTimeout(timer);
        this.#chain = { ok: false, value: error };
        this.#closeOne();
      },
    );
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
    const result = this.#result;
    const method = this.#method;
    const reading = () => {
      this.#reading = true;
      this.#letGo();
    };
    return (async function* () {
      const value = await result;
      if (!isStream(value)) {
        throw new ConduitError(
          `"${method}" returned a single value, not a stream: await it instead`,
        );
      }
      reading();
      yield* value;
    })();
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
