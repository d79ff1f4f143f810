// A worker's channel and its typed `remote`, the same for a process and a thread: each call is
// tracked by the worker's KeepAlive (so an unref'd worker still answers an awaited call) and
// its failures pass through the worker's translation into WorkerExitedError.

import { Channel, type ChannelOptions } from "../channel/channel.ts";
import { DualCall, type OverListener, type Overseeable, remoteProxy } from "../channel/_remote.ts";
import { DrainTimeoutError } from "../channel/errors.ts";
import type { CallOptions, RemoteOf, RemoteStream } from "../channel/types.ts";
import type { Transport } from "../transports/types.ts";
import { DEFAULT_WORKER_CALL_TIMEOUT, DEFAULT_WORKER_TRUST_PEER } from "./worker_env.ts";

/** A worker's open (or opening) channel and the remote its handle shows. */
export interface WorkerChannel<Api extends object> {
  channel: Channel<Api>;
  remote: RemoteOf<Api>;
}

/** Opens a channel over `transport`; the handshake is under way when this returns. */
export function workerChannel<Api extends object>(
  transport: Transport,
  options: ChannelOptions,
  worker: { keepAlive: KeepAlive; translate: Translate },
): WorkerChannel<Api> {
  const channel = new Channel<Api>(transport, options);
  const call = channel.call.bind(channel) as unknown as (
    method: string,
    param: unknown,
    options: CallOptions | undefined,
  ) => ChannelCall;
  const { keepAlive, translate } = worker;
  const remote = remoteProxy<Api>((method, param, callOptions) => {
    const inner = call(method, param, callOptions);
    keepAlive.track(inner);
    return new WorkerCall(inner, translate);
  });
  return { channel, remote };
}

/**
 * Why this side cut the worker's channel off (its close() outlived `drainTimeout`), when
 * `error` comes of that cut; `undefined` for any other failure, the worker's own included.
 */
export function drainCutReason(error: unknown): string | undefined {
  for (const level of causeChain(error)) {
    if (level instanceof DrainTimeoutError) return level.message;
  }
  return undefined;
}

/** `error` and its causes, outermost first: at most 8 (a reason given to abort() may loop). */
export function* causeChain(error: unknown): Generator<Error> {
  let level = error;
  for (let depth = 0; depth < 8 && level instanceof Error; depth++, level = level.cause) {
    yield level;
  }
}

/** A worker channel's options: the caller's, over the worker defaults (see worker_env.ts). */
export function withWorkerDefaults(options: ChannelOptions): ChannelOptions {
  return {
    trustPeer: DEFAULT_WORKER_TRUST_PEER,
    ...options,
    defaultTimeout: options.defaultTimeout ?? DEFAULT_WORKER_CALL_TIMEOUT,
  };
}

// The object a worker's remote method returns: the channel's call, seen through a function
// that turns connection errors into WorkerExitedError. Like the channel's call it is both
// awaitable and async-iterable, and the first use decides which; errors are translated on
// both faces, and only on failure, so a successful call costs no extra promise.
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

// Whether a worker keeps this program alive: always, unless unref() was called; then only
// while a call made through it is in flight, so an awaited call still gets its answer.
/** A worker's hold on the event loop; `apply(true)` refs its resources, `false` unrefs them. */
export class KeepAlive {
  readonly #apply: (hold: boolean) => void;
  #unref = false;
  #calls = 0;
  #held = true;
  readonly #over = (): void => {
    this.#calls--;
    this.#update();
  };

  constructor(apply: (hold: boolean) => void) {
    this.#apply = apply;
  }

  ref(): void {
    this.#unref = false;
    this.#update();
  }

  unref(): void {
    this.#unref = true;
    this.#update();
  }

  /** Holds the program while `call` is in flight. */
  track(call: Overseeable): void {
    this.#calls++;
    this.#update();
    call.whenOver(this.#over);
  }

  #update(): void {
    const hold = !this.#unref || this.#calls > 0;
    if (hold === this.#held) return;
    this.#held = hold;
    this.#apply(hold);
  }
}

/** What unref(), ref() and `await using` do on a worker handle, process or thread alike. */
export abstract class HeldWorker implements AsyncDisposable {
  /** The worker's hold on the event loop. */
  protected abstract readonly keepAlive: KeepAlive;

  abstract close(): Promise<Deno.CommandStatus>;

  unref(): void {
    this.keepAlive.unref();
  }

  ref(): void {
    this.keepAlive.ref();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close().then(() => {});
  }
}
