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
//
// Below them, a channel's own call object (CallResult) and the credit-based streams of call
// bodies (StreamInbox, StreamPump) that it and the served calls use.

import { ConduitError } from "../errors.ts";
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
    {
      signal: true,
      timeout: true,
      onProgress: true,
      key: true,
      attempt: true,
      headers: true,
    } satisfies Record<
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

// ---------------------------------------------------------------- a channel's call object

// The two faces of a call's outcome: the object a remote method returns is awaitable (a unary
// result) and async-iterable (a result stream); the first use decides which, and the
// remote's TypeScript type shows only the right face. The call's life on the wire is the
// subclass's (OutgoingCall, _outgoing_calls.ts); this class only receives what the wire
// brought. It is a DualCall, the one call-object base that the worker's and the pool's calls
// share too: catch, finally, readable and cancel come from there.

/** Which face of a CallResult was used first. */
const FACE_NONE = 0;
const FACE_PROMISE = 1;
const FACE_STREAM = 2;
/** Read by an interceptor chain: a value, or a stream view once the peer starts a stream. */
const FACE_EITHER = 3;

/** How a CallResult's unary outcome stands. */
const PENDING = 0;
const VALUE = 1;
const FAILURE = 2;

/** Whether the call is over on the wire (see `whenOver`), and how; a failure's error is `#error`. */
const NOT_OVER = 0;
const OVER_OK = 1;
const OVER_FAILED = 2;

/** Told once when a call is over, whichever face it is read through (see `whenOver`). */
export type OverListener = (ok: boolean, error: unknown) => void;

/** A call that says when it is over without choosing its face (what a worker pool needs). */
export interface Overseeable {
  /**
   * Calls `listener` once the call is over on the wire: its single result or its stream's
   * end arrived (`ok`), or it failed (`error`). It does not fix the call's face. Listeners
   * are called in the order they were added.
   */
  whenOver(listener: OverListener): void;
}

/** The outcome of one call, as a promise or as a stream. */
export abstract class CallResult extends DualCall implements InboxOwner, Overseeable {
  readonly method: string;
  readonly #window: number;
  #face = FACE_NONE;
  /** Whether the call is over on the wire, and who waits to hear it. */
  #over = NOT_OVER;
  #overListener: OverListener | undefined;
  #outcome = PENDING;
  #value: unknown;
  #error: unknown;
  #promise: Promise<unknown> | undefined;
  #resolve: ((value: unknown) => void) | undefined;
  #reject: ((error: unknown) => void) | undefined;
  #inbox: StreamInbox<unknown> | undefined;

  constructor(method: string, window: number) {
    super();
    this.method = method;
    this.#window = window;
  }

  /** Cancels the call on the wire (the caller gave up on it). */
  abstract cancelCall(error: unknown, reason: string): void;
  /** The call turned out to be a stream while awaited as a promise: stop it. */
  protected abstract expectedOneValue(error: unknown): void;
  abstract grantCredit(bytes: number): void;
  abstract abandonStream(): void;

  // ---- the promise face ----

  then<R1 = unknown, R2 = never>(
    onfulfilled?: ((value: unknown) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.#asPromise().then(onfulfilled, onrejected);
  }

  /**
   * The outcome without choosing a face first (what an interceptor chain awaits): the value,
   * or, once the peer starts a stream, a {@linkcode RemoteStream} view of it (not thenable).
   */
  either(): Promise<unknown> {
    if (this.#face !== FACE_NONE) {
      return Promise.reject(new ConduitError(`The call to "${this.method}" was already read`));
    }
    if (this.#inbox !== undefined) return Promise.resolve(new StreamView(this));
    if (this.#outcome === VALUE) return Promise.resolve(this.#value);
    if (this.#outcome === FAILURE) return Promise.reject(this.#error);
    this.#face = FACE_EITHER;
    return this.#promise = new Promise<unknown>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  // ---- the stream face ----

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    if (this.#face === FACE_PROMISE) {
      throw new ConduitError(`The call to "${this.method}" was already awaited as a promise`);
    }
    this.#face = FACE_STREAM;
    const inbox = this.#streamInbox();
    if (this.#outcome === VALUE) {
      inbox.fail(
        new ConduitError(
          `"${this.method}" returned a single value, not a stream: await it instead`,
        ),
        true,
      );
    }
    return inbox;
  }

  protected cancelUnread(reason: unknown): Promise<void> {
    if (this.#inbox !== undefined && this.#face === FACE_STREAM) {
      return this.#inbox.return().then(() => {});
    }
    this.cancelCall(
      reason ?? new ConduitError(`The call to "${this.method}" was cancelled`),
      reasonText(reason) ?? "cancelled by the caller",
    );
    return Promise.resolve();
  }

  whenOver(listener: OverListener): void {
    if (this.#over !== NOT_OVER) {
      return listener(this.#over === OVER_OK, this.#over === OVER_OK ? undefined : this.#error);
    }
    const first = this.#overListener;
    this.#overListener = first === undefined ? listener : (ok, error) => {
      first(ok, error);
      listener(ok, error);
    };
  }

  #isOver(ok: boolean, error: unknown): void {
    if (this.#over !== NOT_OVER) return;
    this.#over = ok ? OVER_OK : OVER_FAILED;
    const listener = this.#overListener;
    if (listener === undefined) return;
    this.#overListener = undefined;
    listener(ok, error);
  }

  // ---- what the wire brought ----

  /** The single result arrived. */
  settle(value: unknown): void {
    if (this.#outcome !== PENDING) return;
    this.#outcome = VALUE;
    this.#value = value;
    this.#isOver(true, undefined);
    if (this.#resolve !== undefined) this.#resolve(value);
    else if (this.#inbox !== undefined) {
      this.#inbox.fail(
        new ConduitError(
          `"${this.method}" returned a single value, not a stream: await it instead`,
        ),
        true,
      );
    }
  }

  /** The call failed; `immediate` drops buffered stream items (see StreamInbox.fail). */
  fail(error: unknown, immediate: boolean): void {
    if (this.#outcome !== PENDING) return;
    this.#outcome = FAILURE;
    this.#error = error;
    this.#isOver(false, error);
    this.#reject?.(error);
    this.#inbox?.fail(error, immediate);
  }

  /**
   * A stream item arrived; returns false when it exceeds the stream's credit. Awaited as a
   * promise, the call fails instead.
   */
  data(item: unknown, cost: number): boolean {
    const inbox = this.#streamInbox();
    if (!inbox.push(item, cost)) return false;
    if (this.#face === FACE_PROMISE) this.#failAsStream();
    else if (this.#face === FACE_EITHER) this.#streamStarted();
    return true;
  }

  /** Counts a stream item that could not be decoded; false when beyond credit. */
  charge(cost: number): boolean {
    return this.#streamInbox().charge(cost);
  }

  /** The result stream ended. */
  end(): void {
    this.#isOver(true, undefined);
    this.#streamInbox().end();
    if (this.#face === FACE_PROMISE) this.#failAsStream();
    else if (this.#face === FACE_EITHER) this.#streamStarted();
  }

  #streamInbox(): StreamInbox<unknown> {
    if (this.#inbox === undefined) {
      this.#inbox = new StreamInbox<unknown>(this, this.#window);
      if (this.#outcome === FAILURE) this.#inbox.fail(this.#error, true);
    }
    return this.#inbox;
  }

  /** Read through `either()`, the call turned out a stream: hand over a view of it. */
  #streamStarted(): void {
    const resolve = this.#resolve;
    this.#resolve = this.#reject = undefined;
    this.#promise = undefined;
    this.#face = FACE_NONE;
    resolve?.(new StreamView(this));
  }

  #failAsStream(): void {
    const error = new ConduitError(
      `"${this.method}" returned a stream: iterate it instead of awaiting it`,
    );
    this.#reject?.(error);
    this.#reject = this.#resolve = undefined;
    this.expectedOneValue(error);
  }

  #asPromise(): Promise<unknown> {
    if (this.#promise !== undefined) return this.#promise;
    if (this.#face === FACE_STREAM) {
      return Promise.reject(
        new ConduitError(`The call to "${this.method}" is being read as a stream`),
      );
    }
    this.#face = FACE_PROMISE;
    if (this.#inbox !== undefined) {
      const error = new ConduitError(
        `"${this.method}" returned a stream: iterate it instead of awaiting it`,
      );
      this.#promise = Promise.reject(error);
      this.expectedOneValue(error);
    } else if (this.#outcome === VALUE) {
      this.#promise = Promise.resolve(this.#value);
    } else if (this.#outcome === FAILURE) {
      this.#promise = Promise.reject(this.#error);
    } else {
      this.#promise = new Promise<unknown>((resolve, reject) => {
        this.#resolve = resolve;
        this.#reject = reject;
      });
    }
    return this.#promise;
  }
}

/** The words of a cancel reason, for the peer. */
export function reasonText(reason: unknown): string | undefined {
  if (reason === undefined) return undefined;
  try {
    const text = reason instanceof Error ? reason.message : reason;
    return typeof text === "string" ? text : String(text);
  } catch {
    // No string form (a null-prototype object, a throwing getter): the call is cancelled
    // all the same, with the caller's default words.
    return undefined;
  }
}

// ---------------------------------------------------------------- streams of call bodies

// Credit-based flow control for one stream (docs/protocol.md §7): the consuming side
// (StreamInbox) and the producing side (StreamPump). Both are driven by the channel core and
// report to an owner object, so a stream costs no closures per item.

/** What a {@linkcode StreamInbox} asks of its owner. */
export interface InboxOwner {
  /** Sends CREDIT for this stream. */
  grantCredit(bytes: number): void;
  /** The consumer stopped early: send CANCEL for this stream. */
  abandonStream(): void;
}

/** The states of a StreamInbox. */
const OPEN = 0;
const ENDED = 1;
const FAILED = 2;
const ABANDONED = 3;

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * The consuming end of a stream: buffers the items the peer sent and hands them to one
 * async iterator, granting credit back as they are consumed. The buffer holds at most the
 * window plus one frame, since a peer that sends beyond its credit is refused.
 */
export class StreamInbox<T> implements AsyncIterableIterator<T> {
  readonly #owner: InboxOwner;
  readonly #window: number;
  readonly #grantAt: number;
  #granted = 0;
  #received = 0;
  #ungranted = 0;
  #items: T[] = [];
  #costs: number[] = [];
  #head = 0;
  #state = OPEN;
  #error: unknown;
  /** Reads waiting for an item, oldest first: next() may be called again before one settles. */
  #waiters: PromiseWithResolvers<IteratorResult<T>>[] = [];

  constructor(owner: InboxOwner, window: number) {
    this.#owner = owner;
    this.#window = window;
    this.#grantAt = Math.max(1, Math.floor(window / 2));
  }

  /** Whether the stream has ended, failed or been abandoned. */
  get closed(): boolean {
    return this.#state !== OPEN;
  }

  /** Whether the consumer abandoned the stream. */
  get abandoned(): boolean {
    return this.#state === ABANDONED;
  }

  /** Credit the peer still has, as this side counts it. */
  get credit(): number {
    return this.#window + this.#granted - this.#received;
  }

  /**
   * Accepts one item that cost `cost` bytes. Returns false, accepting nothing, when the peer
   * had no credit left: a protocol error.
   */
  push(item: T, cost: number): boolean {
    if (this.#window + this.#granted - this.#received <= 0) return false;
    this.#received += cost;
    if (this.#state !== OPEN) return true;
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) {
      this.#consumed(cost);
      waiter.resolve({ done: false, value: item });
      return true;
    }
    this.#items.push(item);
    this.#costs.push(cost);
    return true;
  }

  /** Counts the cost of an item that arrived but will not be delivered (it could not be decoded). */
  charge(cost: number): boolean {
    if (this.#window + this.#granted - this.#received <= 0) return false;
    this.#received += cost;
    return true;
  }

  /** The producer finished: the consumer sees the end after the buffered items. */
  end(): void {
    if (this.#state !== OPEN) return;
    this.#state = ENDED;
    this.#wake();
  }

  /**
   * The stream failed. With `immediate`, buffered items are dropped and the consumer sees the
   * error at once (local abort, deadline, lost connection); otherwise after them (the
   * producer's own error).
   */
  fail(error: unknown, immediate: boolean): void {
    if (this.#state !== OPEN && this.#state !== ENDED) return;
    if (this.#state === ENDED && !immediate) return;
    this.#state = FAILED;
    this.#error = error;
    if (immediate) this.#clear();
    this.#wake();
  }

  next(): Promise<IteratorResult<T>> {
    if (this.#head < this.#items.length) {
      const head = this.#head;
      const item = this.#items[head];
      const cost = this.#costs[head];
      if (head + 1 === this.#items.length) {
        this.#items = [];
        this.#costs = [];
        this.#head = 0;
      } else {
        this.#items[head] = undefined as T;
        this.#head = head + 1;
      }
      this.#consumed(cost);
      return Promise.resolve({ done: false, value: item });
    }
    switch (this.#state) {
      case OPEN: {
        const waiter = Promise.withResolvers<IteratorResult<T>>();
        this.#waiters.push(waiter);
        return waiter.promise;
      }
      case FAILED:
        // Deliver the error once; later reads see the end.
        this.#state = ENDED;
        return Promise.reject(this.#error);
      default:
        return Promise.resolve(DONE);
    }
  }

  return(): Promise<IteratorResult<T>> {
    if (this.#state === OPEN) {
      this.#state = ABANDONED;
      this.#clear();
      this.#wake();
      this.#owner.abandonStream();
    } else if (this.#state === FAILED) {
      this.#state = ENDED;
    }
    return Promise.resolve(DONE);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  #consumed(cost: number): void {
    if (this.#state !== OPEN) return;
    this.#ungranted += cost;
    if (this.#ungranted >= this.#grantAt) {
      const bytes = this.#ungranted;
      this.#ungranted = 0;
      this.#granted += bytes;
      this.#owner.grantCredit(bytes);
    }
  }

  #clear(): void {
    this.#items = [];
    this.#costs = [];
    this.#head = 0;
  }

  /** The stream ended or failed: the first waiting read sees how, the others the end. */
  #wake(): void {
    const waiters = this.#waiters;
    if (waiters.length === 0) return;
    this.#waiters = [];
    for (const waiter of waiters) {
      if (this.#state === FAILED) {
        this.#state = ENDED;
        waiter.reject(this.#error);
      } else {
        waiter.resolve(DONE);
      }
    }
  }
}

/** What a {@linkcode StreamPump} asks of its owner. */
export interface PumpOwner {
  /** Encodes and sends one item; returns its cost in credit. Throws when it cannot be sent. */
  sendItem(value: unknown): number;
  /** The source finished: send END. */
  sendEnd(): void;
  /** The source failed: send ERROR. */
  sendFailure(error: unknown): void;
  /** Undefined while the transport takes more; else a promise of when it will. */
  writable(): Promise<void> | undefined;
}

/**
 * The producing end of a stream: pulls items from a source while it has credit and sends
 * them. {@linkcode stop} (the consumer cancelled, or the call ended) makes it call the
 * source's `return()`, so a generator's `finally` runs.
 */
export class StreamPump {
  readonly #owner: PumpOwner;
  readonly #source: AsyncIterable<unknown>;
  #credit: number;
  #stopped = false;
  #wake: (() => void) | undefined;

  constructor(owner: PumpOwner, source: AsyncIterable<unknown>, credit: number) {
    this.#owner = owner;
    this.#source = source;
    this.#credit = credit;
  }

  /** Whether the pump was stopped. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Starts pulling; the returned promise settles once the source is finished or stopped. */
  run(): Promise<void> {
    return this.#run();
  }

  /** Adds credit granted by the consumer. */
  credit(bytes: number): void {
    this.#credit += bytes;
    if (this.#credit > 0) this.#resume();
  }

  /** Stops pulling and closes the source. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#resume();
  }

  async #run(): Promise<void> {
    let iterator: AsyncIterator<unknown>;
    try {
      iterator = this.#source[Symbol.asyncIterator]();
    } catch (error) {
      if (!this.#stopped) this.#owner.sendFailure(error);
      return;
    }
    let finished = false;
    try {
      while (!this.#stopped) {
        if (this.#credit <= 0) {
          await new Promise<void>((resolve) => this.#wake = resolve);
          continue;
        }
        const writable = this.#owner.writable();
        if (writable !== undefined) {
          // Stopped while the transport is full, the source is closed at once, not once the
          // transport drains (a peer that stops reading may never let it).
          await Promise.race([writable, new Promise<void>((resolve) => this.#wake = resolve)]);
          this.#wake = undefined;
          continue;
        }
        const step = await iterator.next();
        if (this.#stopped) break;
        if (step.done) {
          finished = true;
          this.#owner.sendEnd();
          return;
        }
        this.#credit -= this.#owner.sendItem(step.value);
      }
    } catch (error) {
      if (!this.#stopped) {
        this.#stopped = true;
        this.#owner.sendFailure(error);
      }
    } finally {
      if (!finished) {
        try {
          await iterator.return?.();
        } catch {
          // The source failed while closing; the stream is over either way.
        }
      }
    }
  }

  #resume(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

/** A call's stream face as a plain object, which a promise can resolve with. */
export class StreamView implements RemoteStream<unknown> {
  readonly #call: DualCall;

  constructor(call: DualCall) {
    this.#call = call;
  }

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    return this.#call[Symbol.asyncIterator]();
  }

  get readable(): ReadableStream<unknown> {
    return this.#call.readable;
  }

  cancel(reason?: unknown): Promise<void> {
    return this.#call.cancel(reason);
  }
}
