// The object a worker's remote method returns: the channel's call, seen through a function
// that turns connection errors into WorkerExitedError. Like the channel's call it is both
// awaitable and async-iterable, and the first use decides which; errors are translated on
// both faces, and only on failure, so a successful call costs no extra promise.

import type { RemoteStream } from "../channel/types.ts";

/** The channel's call object: a promise and a stream in one. */
export type DualCall = PromiseLike<unknown> & RemoteStream<unknown>;

/** Maps a failure of the call to the error the caller should see. */
export type Translate = (error: unknown) => Promise<unknown>;

/** A channel call whose failures pass through `translate`. */
export class WorkerCall implements Promise<unknown>, RemoteStream<unknown> {
  readonly #inner: DualCall;
  readonly #translate: Translate;
  #readable: ReadableStream<unknown> | undefined;

  constructor(inner: DualCall, translate: Translate) {
    this.#inner = inner;
    this.#translate = translate;
  }

  get [Symbol.toStringTag](): string {
    return "WorkerCall";
  }

  then<R1 = unknown, R2 = never>(
    onfulfilled?: ((value: unknown) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    const translate = this.#translate;
    return Promise.resolve(this.#inner.then(onfulfilled, async (error) => {
      const translated = await translate(error);
      if (onrejected) return onrejected(translated);
      throw translated;
    }));
  }

  catch<R = never>(
    onrejected?: ((reason: unknown) => R | PromiseLike<R>) | null,
  ): Promise<unknown> {
    return this.then(undefined, onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<unknown> {
    return this.then().finally(onfinally);
  }

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    const iterator = this.#inner[Symbol.asyncIterator]();
    const translate = this.#translate;
    return {
      next: () =>
        iterator.next().then(undefined, async (error) => {
          throw await translate(error);
        }),
      return: (value?: unknown) =>
        iterator.return?.(value) ?? Promise.resolve({ done: true, value: undefined }),
    };
  }

  get readable(): ReadableStream<unknown> {
    return this.#readable ??= ReadableStream.from(this);
  }

  cancel(reason?: unknown): Promise<void> {
    if (this.#readable !== undefined) return this.#readable.cancel(reason);
    return this.#inner.cancel(reason);
  }
}
