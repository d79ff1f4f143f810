// The `remote` object of a channel, a worker and a pool, and the base of the call objects that
// are both a promise and a stream.
//
// `remoteProxy(invoke)` builds the typed `remote`: `remote.add(param, options)` is
// `invoke("add", param, options)`, each method function made once on first use. `then` stays
// undefined so that awaiting `remote` does not call the peer. A handler takes one param, so a
// call with more arguments, or a second one that is not call options, fails with a TypeError
// naming the method rather than a call whose second value is silently taken for options. It
// fails as a call does, not by throwing: the call object rejects (and its stream fails), so
// `.catch()` and `for await` see it.
//
// `DualCall` holds what every call object shares: `catch`, `finally` and `readable` are
// defined from `then` and the async iterator, so a subclass defines only `then`,
// `[Symbol.asyncIterator]` and `cancel` (which face wins is the subclass's decision).

import type { CallOptions, RemoteOf, RemoteStream } from "./types.ts";

/** Starts a call of `method`; what it returns is what `remote[method](param, options)` returns. */
export type Invoke = (method: string, param: unknown, options: CallOptions | undefined) => unknown;

/** The typed `remote` whose methods call `invoke`. */
export function remoteProxy<Api extends object>(invoke: Invoke): RemoteOf<Api> {
  const methods: Record<string, unknown> = Object.create(null);
  return new Proxy(methods, {
    get(target, key) {
      if (typeof key !== "string" || key === "then") return undefined;
      // `arguments.length` rather than a rest parameter, which would cost an array per call.
      return target[key] ??= function (param: unknown, options?: CallOptions): unknown {
        if (arguments.length > 2 || (options !== undefined && !isCallOptions(options))) {
          return new RefusedCall(new TypeError(misuseMessage(key, arguments.length, options)));
        }
        return invoke(key, param, options);
      };
    },
  }) as RemoteOf<Api>;
}

/**
 * The fields of {@linkcode CallOptions}: anything else in a second argument is a mistake.
 * `satisfies` makes a new field of CallOptions a compile error here until it is listed.
 */
const CALL_OPTION_KEYS: ReadonlySet<string> = new Set(
  Object.keys(
    { signal: true, timeout: true, onProgress: true, key: true, attempt: true } satisfies Record<
      keyof CallOptions,
      true
    >,
  ),
);

function isCallOptions(options: unknown): boolean {
  if (typeof options !== "object" || options === null || Array.isArray(options)) return false;
  for (const key in options) if (!CALL_OPTION_KEYS.has(key)) return false;
  return true;
}

function misuseMessage(method: string, count: number, options: unknown): string {
  const what = count > 2
    ? `was called with ${count} arguments`
    : `got ${describe(options)} as its second argument, which is not call options ` +
      `({ ${[...CALL_OPTION_KEYS].join(", ")} })`;
  return `remote.${method}() ${what}: a handler takes one param (and the caller optional ` +
    `call options), so pass several values as one object, e.g. ${method}({ a, b })`;
}

function describe(value: unknown): string {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    return `an object with ${Object.keys(value).map((key) => JSON.stringify(key)).join(", ")}`;
  }
  if (typeof value === "string") return JSON.stringify(value.slice(0, 40));
  return Array.isArray(value) ? "an array" : String(value);
}

/** A call that is awaitable and async-iterable; the first use decides which. */
export abstract class DualCall implements Promise<unknown>, RemoteStream<unknown> {
  #readable: ReadableStream<unknown> | undefined;

  abstract then<R1 = unknown, R2 = never>(
    onfulfilled?: ((value: unknown) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2>;

  abstract [Symbol.asyncIterator](): AsyncIterator<unknown>;

  /** Cancels the call when its stream was never read as a `ReadableStream`. */
  protected abstract cancelUnread(reason: unknown): Promise<void>;

  get [Symbol.toStringTag](): string {
    return this.constructor.name;
  }

  catch<R = never>(
    onrejected?: ((reason: unknown) => R | PromiseLike<R>) | null,
  ): Promise<unknown> {
    return this.then(undefined, onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<unknown> {
    return this.then().finally(onfinally);
  }

  get readable(): ReadableStream<unknown> {
    return this.#readable ??= ReadableStream.from(this);
  }

  cancel(reason?: unknown): Promise<void> {
    if (this.#readable !== undefined) return this.#readable.cancel(reason);
    return this.cancelUnread(reason);
  }
}

/**
 * A call refused before it started: rejects with its error (unhandled if nobody looks, as a
 * throw would be) and, read as a stream, fails at its first item.
 */
class RefusedCall extends DualCall {
  readonly #error: Error;
  readonly #rejected: Promise<never>;

  constructor(error: Error) {
    super();
    this.#error = error;
    this.#rejected = Promise.reject(error);
  }

  then<R1 = unknown, R2 = never>(
    onfulfilled?: ((value: unknown) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.#rejected.then(onfulfilled, onrejected);
  }

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    this.#rejected.catch(() => {});
    const error = this.#error;
    return {
      next: () => Promise.reject(error),
      return: (value?: unknown) => Promise.resolve({ done: true, value }),
    };
  }

  protected cancelUnread(): Promise<void> {
    this.#rejected.catch(() => {});
    return Promise.resolve();
  }
}
