// A call made through a pool: queued until a target (a worker, a NATS connection) is free,
// then run as that target's call. Awaitable and async-iterable like a channel call, and like it
// the first use decides which face it has, whenever that use comes: before it is dispatched,
// or after (a stream made before an `await` and iterated after it). The face is which of the
// two deferreds exists. The dispatcher hears when the target's call is over from the call
// itself (`whenOver`), not from a face, so the target is released and a lost call retried
// whatever the caller did with it.

import type { Overseeable } from "../channel/_remote.ts";
import { DualCall } from "../channel/_remote.ts";
import type { CallOptions, RemoteStream } from "../channel/types.ts";
import { DeadlineExceededError } from "../channel/errors.ts";
import { ConduitError } from "../errors.ts";

/**
 * Reports how a call left its target: `true` when it will run again, `false` when it settles
 * as its target's call did, or the error it fails with instead.
 */
export type Done = (ok: boolean, error: unknown) => boolean | Error;

/** A target's call: a promise and a stream in one, that says when it is over. */
export type InnerCall = PromiseLike<unknown> & RemoteStream<unknown> & Overseeable;

const ignore = (): void => {};

/** A call made through a pool: awaitable and async-iterable like a channel call. */
export class PoolCall extends DualCall {
  readonly method: string;
  /** The caller's options; a retryable call's gain its key on its first dispatch. */
  options: CallOptions | undefined;
  readonly #param: unknown;
  readonly #deadline: number;
  attempts = 0;
  /** Settled for good: failed before a target took it, or its last target call is over. */
  done = false;
  /** On a target now. */
  dispatched = false;
  /** Removes the listeners of the call's signal and deadline while it waits. */
  unlisten: (() => void) | undefined;
  #failure: { error: unknown } | undefined;
  /** The target's call this one runs as, while dispatched and once done. */
  #inner: InnerCall | undefined;
  /**
   * How the caller stopped it: `cancelled` (`cancel()`), or `abandoned` (it stopped reading the
   * stream early, whose end is then no failure).
   */
  #stop: "cancelled" | "abandoned" | undefined;
  /** Exists once the caller awaited the call (the promise face). */
  #result: PromiseWithResolvers<unknown> | undefined;
  /** Exists once the caller iterated the call (the stream face). */
  #stream: PromiseWithResolvers<AsyncIterator<unknown>> | undefined;
  #streamConnected = false;

  constructor(method: string, param: unknown, options: CallOptions | undefined) {
    super();
    this.method = method;
    this.#param = param;
    this.options = options;
    const timeout = options?.timeout;
    this.#deadline = timeout === undefined || timeout === Infinity
      ? Infinity
      : performance.now() + timeout;
  }

  /** Whether the caller reads it as a stream (a stream call is never retried). */
  get streaming(): boolean {
    return this.#stream !== undefined;
  }

  /**
   * Whether the whole input can be sent again: false for a stream param given as an
   * iterator (the first attempt consumed it); a function that returns a fresh iterable is
   * called once per attempt.
   */
  get replayable(): boolean {
    return !isOneShot(this.#param);
  }

  /** Whether the call ended because its caller gave up on it (cancel, signal, deadline). */
  get cancelled(): boolean {
    return this.#stop !== undefined || this.options?.signal?.aborted === true ||
      (this.#deadline !== Infinity && this.remainingTime() <= 0);
  }

  /** The param to send for the next attempt (a fresh iterable from a function). */
  nextParam(): unknown {
    const param = this.#param;
    return typeof param === "function" ? fromSource(param()) : param;
  }

  /** Milliseconds left before the call's deadline (`Infinity` without one). */
  remainingTime(): number {
    return this.#deadline === Infinity ? Infinity : this.#deadline - performance.now();
  }

  then<R1 = unknown, R2 = never>(
    onfulfilled?: ((value: unknown) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    if (this.#stream !== undefined) {
      return Promise.reject(
        new ConduitError(`The pool call to "${this.method}" is being read as a stream`),
      ).then(onfulfilled, onrejected);
    }
    if (this.#result === undefined) {
      this.#result = Promise.withResolvers();
      // The caller's promises come from then(); this one nobody else may ever look at.
      this.#result.promise.catch(ignore);
      if (this.#failure) this.#result.reject(this.#failure.error);
      this.#connect();
    }
    return this.#result.promise.then(onfulfilled, onrejected);
  }

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    if (this.#result !== undefined) {
      throw new ConduitError(`The pool call to "${this.method}" was already awaited as a promise`);
    }
    if (this.#stream === undefined) {
      this.#stream = Promise.withResolvers();
      // Seen by the first next(); nobody else may ever look at it.
      this.#stream.promise.catch(ignore);
      if (this.#failure) this.#stream.reject(this.#failure.error);
    }
    this.#connect();
    return this.#iterate(this.#stream.promise);
  }

  protected cancelUnread(reason: unknown): Promise<void> {
    const error = reason ?? new ConduitError(`The call to "${this.method}" was cancelled`);
    if (this.#inner === undefined) {
      this.fail(error);
      return Promise.resolve();
    }
    // A stream its reader stops ended as far as the pool counts; a cancelled value failed.
    this.#stop = this.#stream !== undefined ? "abandoned" : "cancelled";
    return this.#inner.cancel(error);
  }

  /** Fails the call while no target has it, or in place of its target call's outcome. */
  fail(error: unknown): void {
    if (this.done) return;
    this.done = true;
    this.#failure = { error };
    this.unlisten?.();
    this.#result?.reject(error);
    this.#stream?.reject(error);
  }

  /**
   * Runs the call as the target's call `inner`; `finished` hears once how it ended and says
   * whether the pool will run it again (then this call waits for its next `run`).
   */
  run(inner: InnerCall, finished: Done): void {
    this.dispatched = true;
    this.#inner = inner;
    this.#connect();
    inner.whenOver((ok, error) => {
      this.dispatched = false;
      const verdict = finished(ok || this.#stop === "abandoned", error);
      if (verdict === true) {
        this.#inner = undefined;
        return;
      }
      if (verdict instanceof Error) return this.fail(verdict);
      this.done = true;
      this.#connect();
    });
  }

  /** Hands the target's call to the face the caller chose, as far as it may be yet. */
  #connect(): void {
    const inner = this.#inner;
    if (inner === undefined) return;
    const result = this.#result;
    if (result !== undefined) {
      // Until the call is over it may still be retried: only fix the target call's face (a
      // stream result then fails it at once instead of filling its buffer).
      if (this.done) inner.then(result.resolve, (error) => result.reject(this.#shown(error)));
      else inner.then(undefined, ignore);
    } else if (this.#stream !== undefined && !this.#streamConnected) {
      this.#streamConnected = true;
      this.#stream.resolve(inner[Symbol.asyncIterator]());
    }
  }

  /**
   * The error the caller sees for its target call's `error`. The pool gives each target call
   * what is left of the deadline as its `timeout` (`999.98…` ms after a moment in the queue):
   * a deadline error says the timeout the caller set instead.
   */
  #shown(error: unknown): unknown {
    const timeout = this.options?.timeout;
    if (
      !(error instanceof DeadlineExceededError) || timeout === undefined ||
      error.timeout === timeout
    ) return error;
    return new DeadlineExceededError(error.method, timeout);
  }

  async *#iterate(started: Promise<AsyncIterator<unknown>>): AsyncGenerator<unknown> {
    const iterator = await started;
    let ended = false;
    try {
      for (;;) {
        const step = await iterator.next();
        if (step.done) {
          ended = true;
          return;
        }
        yield step.value;
      }
    } catch (error) {
      ended = true;
      throw this.#shown(error);
    } finally {
      if (!ended) this.#stop = "abandoned";
      await iterator.return?.();
    }
  }
}

/** A param that one attempt consumes: an iterator, or a stream. */
function isOneShot(param: unknown): boolean {
  return typeof param === "object" && param !== null && Symbol.asyncIterator in param;
}

/** What a stream source function returned, as the async iterable the channel streams. */
function fromSource(source: unknown): unknown {
  if (typeof source === "object" && source !== null && Symbol.asyncIterator in source) {
    return source;
  }
  if (source instanceof Uint8Array) return once(source);
  if (typeof source === "object" && source !== null && Symbol.iterator in source) {
    return fromIterable(source as Iterable<unknown>);
  }
  throw new TypeError(
    `A stream source function returned ${typeof source}: it must return an iterable ` +
      `(an array, a Uint8Array, an async iterable)`,
  );
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

async function* fromIterable(items: Iterable<unknown>): AsyncGenerator<unknown> {
  yield* items;
}
