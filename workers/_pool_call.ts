// A call made through a WorkerPool: queued until a worker is free, then run on that worker's
// call. Awaitable and async-iterable like a channel call; which face it has is fixed when it
// is dispatched (see WorkerPool's description).

import { DualCall } from "../channel/_remote.ts";
import type { CallOptions, RemoteStream } from "../channel/types.ts";
import { ConduitError } from "../errors.ts";

const FACE_NONE = 0;
const FACE_PROMISE = 1;
const FACE_STREAM = 2;

/** Reports how a call left its worker; returns whether it will be retried. */
export type Done = (ok: boolean, error: unknown) => boolean;

/**
 * A call made through the pool: awaitable and async-iterable like a channel call. Its face
 * is fixed when it is dispatched (see WorkerPool's description).
 */
export class PoolCall extends DualCall {
  readonly method: string;
  readonly param: unknown;
  readonly options: CallOptions | undefined;
  readonly #deadline: number;
  attempts = 0;
  done = false;
  dispatched = false;
  streaming = false;
  /** Removes the abort listener of the call's signal. */
  unlisten: (() => void) | undefined;
  #failure: { error: unknown } | undefined;
  #face = FACE_NONE;
  #result: PromiseWithResolvers<unknown> | undefined;
  #stream: PromiseWithResolvers<AsyncIterator<unknown>> | undefined;

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
        new ConduitError(`The pool call to "${this.method}" is a stream: iterate it instead`),
      ).then(onfulfilled, onrejected);
    }
    this.#face = FACE_PROMISE;
    return this.#resultPromise().then(onfulfilled, onrejected);
  }

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    if (this.#face === FACE_PROMISE) {
      throw new ConduitError(
        `The pool call to "${this.method}" was ${
          this.dispatched ? "dispatched" : "awaited"
        } as a single value: iterate a stream call in the same tick you make it`,
      );
    }
    this.#face = FACE_STREAM;
    if (this.#stream === undefined) {
      this.#stream = Promise.withResolvers();
      // A failure before dispatch is seen by the first next(), if anyone calls it.
      this.#stream.promise.catch(() => {});
      if (this.#failure) this.#stream.reject(this.#failure.error);
    }
    return this.#iterate(this.#stream.promise);
  }

  protected cancelCall(reason: unknown): Promise<void> {
    if (!this.dispatched) {
      this.fail(reason ?? new ConduitError(`The call to "${this.method}" was cancelled`));
    }
    return Promise.resolve();
  }

  /** Fails the call before it reached a worker. */
  fail(error: unknown): void {
    if (this.done) return;
    this.done = true;
    this.#failure = { error };
    this.unlisten?.();
    this.#resultPromise();
    this.#result!.reject(error);
    // Nobody may ever look at the face that was not used.
    this.#result!.promise.catch(() => {});
    this.#stream?.reject(error);
  }

  /** Runs the call on a worker's channel call; `finished` reports how it ended. */
  run(inner: PromiseLike<unknown> & RemoteStream<unknown>, finished: Done): void {
    this.dispatched = true;
    if (this.#face === FACE_STREAM) {
      this.streaming = true;
      const iterator = inner[Symbol.asyncIterator]();
      this.#stream!.resolve(releasing(iterator, finished));
      return;
    }
    this.#face = FACE_PROMISE;
    const result = this.#resultPromise();
    void result;
    inner.then((value) => {
      finished(true, undefined);
      this.done = true;
      this.#result!.resolve(value);
    }, (error) => {
      if (finished(false, error)) return;
      this.done = true;
      this.#result!.reject(error);
    });
  }

  #resultPromise(): Promise<unknown> {
    if (this.#result === undefined) {
      this.#result = Promise.withResolvers();
    }
    return this.#result.promise;
  }

  async *#iterate(started: Promise<AsyncIterator<unknown>>): AsyncGenerator<unknown> {
    const iterator = await started;
    try {
      for (;;) {
        const step = await iterator.next();
        if (step.done) return;
        yield step.value;
      }
    } finally {
      await iterator.return?.();
    }
  }
}

/** Wraps a stream's iterator so that its end, failure or abandonment is reported once. */
function releasing(iterator: AsyncIterator<unknown>, finished: Done): AsyncIterator<unknown> {
  let reported = false;
  const report = (ok: boolean, error: unknown) => {
    if (reported) return;
    reported = true;
    finished(ok, error);
  };
  return {
    next: () =>
      iterator.next().then((step) => {
        if (step.done) report(true, undefined);
        return step;
      }, (error) => {
        report(false, error);
        throw error;
      }),
    return: async (value?: unknown) => {
      try {
        return await (iterator.return?.(value) ?? { done: true as const, value: undefined });
      } finally {
        report(true, undefined);
      }
    },
  };
}
