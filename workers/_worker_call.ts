// The object a worker's remote method returns: the channel's call, seen through a function
// that turns connection errors into WorkerExitedError. Like the channel's call it is both
// awaitable and async-iterable, and the first use decides which; errors are translated on
// both faces, and only on failure, so a successful call costs no extra promise.

import type { OverListener, Overseeable } from "../channel/_remote.ts";
import { DualCall } from "../channel/_remote.ts";
import type { RemoteStream } from "../channel/types.ts";

/** The channel's call object: a promise and a stream in one, that says when it is over. */
export type ChannelCall = PromiseLike<unknown> & RemoteStream<unknown> & Overseeable;

/** Maps a failure of the call to the error the caller should see. */
export type Translate = (error: unknown) => Promise<unknown>;

/** A channel call whose failures pass through `translate`. */
export class WorkerCall extends DualCall implements Overseeable {
  readonly #inner: ChannelCall;
  readonly #translate: Translate;

  constructor(inner: ChannelCall, translate: Translate) {
    super();
    this.#inner = inner;
    this.#translate = translate;
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

  whenOver(listener: OverListener): void {
    const translate = this.#translate;
    this.#inner.whenOver((ok, error) => {
      if (ok) listener(true, undefined);
      else {
        translate(error).then(
          (translated) => listener(false, translated),
          () => listener(false, error),
        );
      }
    });
  }

  protected cancelUnread(reason: unknown): Promise<void> {
    return this.#inner.cancel(reason);
  }
}
