// A call made through a WorkerPool: queued until a worker is free, then run on that worker's
// call. Awaitable and async-iterable like a channel call, and like it the first use decides
// which face it has, whenever that use comes: before it is dispatched, or after (a stream
// made before an `await` and iterated after it). The pool hears when the worker's call is
// over from the call itself (`whenOver`), not from a face, so the worker is released and a
// crashed call retried whatever the caller did with it.

import type { Overseeable } from "../channel/_call_result.ts";
import { DualCall } from "../channel/_remote.ts";
import type { CallOptions, RemoteStream } from "../channel/types.ts";
import { ConduitError } from "../errors.ts";

const FACE_NONE = 0;
const FACE_PROMISE = 1;
const FACE_STREAM = 2;

/** Reports how a call left its worker; returns whether it will be retried. */
export type Done = (ok: boolean, error: unknown) => boolean;

/** A worker's call: a promise and a stream in one, that says when it is over. */
export type InnerCall = PromiseLike<unknown> & RemoteStream<unknown> & Overseeable;

const ignore = (): void => {};

/** A call made through the pool: awaitable and async-iterable like a channel call. */
export class PoolCall extends DualCall {
  readonly method: string;
  readonly param: unknown;
  readonly options: CallOptions | undefined;
  readonly #deadline: number;
  attempts = 0;
  /** Settled for good: failed before a worker took it, or its last worker call is over. */
  done = false;
  /** On a worker now. */
  dispatched = false;
  /** Removes the abort listener of the call's signal. */
  unlisten: (() => void) | undefined;
  #failure: { error: unknown } | undefined;
  #face = FACE_NONE;
  /** The worker's call this one runs as, while dispatched and once done. */
  #inner: InnerCall | undefined;
  /** The caller stopped reading the stream early: its end is no failure. */
  #abandoned = false;
  #result: PromiseWithResolvers<unknown> | undefined;
  #stream: PromiseWithResolvers<AsyncIterator<unknown>> | undefined;
  #streamConnected = false;

  constructor(method: string, param: unknown, options: CallOptions | undefined) {
    super();
    this.method = method;
    this.param = param;
    this.options = options;
    const timeout = options?.timeout;
    this.#deadline = timeout === undefined || timeout === Infinity
      ? Infinity
      : performance.now() + timeout;
  }

  /** Whether the caller reads it as a stream (a stream call is never retried). */
  get streaming(): boolean {
    return this.#face === FACE_STREAM;
  }

  /** Milliseconds left before the call's deadline (`Infinity` without one). */
  remainingTime(): number {
    return this.#deadline === Infinity ? Infinity : this.#deadline - performance.now();
  }

  then<R1 = unknown, R2 = never>(
    onfulfilled?: ((value: unknown) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    if (this.#face === FACE_STREAM) {
      return Promise.reject(
        new ConduitError(`The pool call to "${this.method}" is being read as a stream`),
      ).then(onfulfilled, onrejected);
    }
    this.#face = FACE_PROMISE;
    const result = this.#resultDeferred();
    this.#connect();
    return result.promise.then(onfulfilled, onrejected);
  }

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    if (this.#face === FACE_PROMISE) {
      throw new ConduitError(`The pool call to "${this.method}" was already awaited as a promise`);
    }
    this.#face = FACE_STREAM;
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
    if (this.#face === FACE_STREAM) this.#abandoned = true;
    return this.#inner.cancel(error);
  }

  /** Fails the call while no worker has it. */
  fail(error: unknown): void {
    if (this.done) return;
    this.done = true;
    this.#failure = { error };
    this.unlisten?.();
    this.#result?.reject(error);
    this.#stream?.reject(error);
  }

  /**
   * Runs the call as the worker's call `inner`; `finished` hears once how it ended and says
   * whether the pool will run it again (then this call waits for its next `run`).
   */
  run(inner: InnerCall, finished: Done): void {
    this.dispatched = true;
    this.#inner = inner;
    this.#connect();
    inner.whenOver((ok, error) => {
      this.dispatched = false;
      if (finished(ok || this.#abandoned, error)) {
        this.#inner = undefined;
        return;
      }
      this.done = true;
      this.#connect();
    });
  }

  /** Hands the worker's call to the face the caller chose, as far as it may be yet. */
  #connect(): void {
    const inner = this.#inner;
    if (inner === undefined) return;
    if (this.#face === FACE_PROMISE) {
      const result = this.#result!;
      // Until the call is over it may still be retried: only fix the worker call's face (a
      // stream result then fails it at once instead of filling its buffer).
      if (this.done) inner.then(result.resolve, result.reject);
      else inner.then(undefined, ignore);
    } else if (this.#face === FACE_STREAM && !this.#streamConnected) {
      this.#streamConnected = true;
      this.#stream!.resolve(inner[Symbol.asyncIterator]());
    }
  }

  #resultDeferred(): PromiseWithResolvers<unknown> {
    if (this.#result === undefined) {
      this.#result = Promise.withResolvers();
      // The caller's promises come from then(); this one nobody else may ever look at.
      this.#result.promise.catch(ignore);
      if (this.#failure) this.#result.reject(this.#failure.error);
    }
    return this.#result;
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
      throw error;
    } finally {
      if (!ended) this.#abandoned = true;
      await iterator.return?.();
    }
  }
}
