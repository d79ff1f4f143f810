// The one dispatcher both pools share (WorkerPool: worker slots; NatsServicePool: channels to
// instances). It owns what a pooled call goes through: admission (closed, failed, queue full),
// the bounded queue with the call's signal and deadline armed while it waits, the choice of the
// least-loaded target, the rewrite of `timeout` to what is left of it, the retry rule and the
// counts. The pools own their targets: how they start, fail, leave and are released.
//
// The retry rule, so that a retry can never change an answer: a call is run again only when
// its target was lost (the manager says so), its method is retryable, it is not being read as
// a stream, its caller has not given up on it (cancel(), signal, deadline: a worker that dies
// as the call is cancelled must not have it run again), attempts remain, and its whole input
// can be sent again. A stream param given as an iterator cannot (the lost attempt consumed
// it): such a call fails with CallNotReplayableError rather than being re-sent with what was
// left of its input.
//
// A cancelled call (signal, cancel(), deadline) frees its target only when the manager says
// the target is free again (`afterCancel`): a worker stuck in a synchronous handler does not
// see the cancel, and must not be handed the next call while another sits idle.

import { DeadlineExceededError } from "../channel/errors.ts";
import type { CallOptions, RemoteStream } from "../channel/types.ts";
import { CallNotReplayableError, PoolClosedError, PoolQueueFullError } from "./errors.ts";
import { activeContext, inContext, otelApi, type OtelContext } from "../channel/_otel.ts";
import { DualCall, type Overseeable } from "../channel/_remote.ts";
import { ConduitError } from "../errors.ts";
import { integerOption, numberOption, positiveOption } from "../_options.ts";
import { fireAt } from "../_runtime.ts";

/** Something the dispatcher sends calls to: a worker slot, a channel to an instance. */
export interface Target {
  /** Calls on it now, counted by the dispatcher (a cancelled call until the target is free). */
  inFlight: number;
  /** Whether it takes new calls. */
  readonly open: boolean;
}

/** What a pool tells the dispatcher about its targets, and hears from it. */
export interface TargetManager<T extends Target> {
  /** The pool's targets (open or not: the dispatcher skips the closed ones). */
  targets(): readonly T[];
  /** Calls that targets being started or restarted will take: room the queue may count on. */
  startingCapacity(): number;
  /** Starts `method` on `target`. */
  send(target: T, method: string, param: unknown, options: CallOptions | undefined): InnerCall;
  /**
   * A call on `target` failed: takes the target out if it is lost, and says so (a retry may
   * follow). `"unspent"`: lost with the connection under every target, which the attempt
   * does not count against (the call waits, within its deadline, for a healthy target).
   */
  lost(target: T, error: unknown): boolean | "unspent";
  /** A call left `target` (its count is already down): recycle, close or arm timers. */
  released(target: T, ok: boolean): void;
  /**
   * A call on `target` was cancelled by its caller: resolves once the target is free of it
   * (its worker answered the cancel, or was replaced). Without it the target is free at once.
   */
  afterCancel?(target: T): Promise<void>;
  /** Calls wait: start targets that were stopped. */
  needed?(): void;
  /** A call is about to run again after `error` lost it on `target`. */
  retrying?(target: T, call: PoolCall, error: unknown): void;
}

/** The dispatcher's limits, checked by the pool. */
export interface DispatchLimits {
  /** Calls one target runs at once. */
  concurrency: number;
  /** Calls that may wait beyond the room the targets have. */
  maxQueued: number;
  /** Tries in all for a retryable call. */
  maxAttempts: number;
  /** The methods safe to run again. */
  retryable: ReadonlySet<string>;
}

/** What the dispatcher counts. */
export interface DispatchCounts {
  inFlight: number;
  completed: number;
  failed: number;
  retried: number;
}

/** Numbers pools apart in their metrics' attributes. */
let poolIds = 0;

/**
 * Reports `pool.stats` as metrics (see _pool_metrics.ts, loaded only then) while `open()`,
 * when the runtime traces.
 */
export function observed(
  pool: { readonly stats: object },
  kind: "worker" | "nats",
  name: string,
  open: () => boolean,
): void {
  const api = otelApi();
  if (api === undefined) return;
  const attributes = {
    "conduit.pool.kind": kind,
    "conduit.pool.name": name,
    "conduit.pool.id": String(++poolIds),
  };
  void import("./_pool_metrics.ts").then((metrics) =>
    metrics.observePool(api, attributes, () => pool.stats, open)
  );
}

/** Queues calls and sends them to the least-loaded target of a {@linkcode TargetManager}. */
export class Dispatcher<T extends Target> {
  readonly counts: DispatchCounts = { inFlight: 0, completed: 0, failed: 0, retried: 0 };
  readonly limits: DispatchLimits;
  readonly #manager: TargetManager<T>;
  readonly #queue = new CallQueue<PoolCall>();
  /** Who waits for what: room in the queue, no call at all, an empty queue. */
  readonly #waiters = {
    room: [] as Array<() => void>,
    idle: [] as Array<() => void>,
    emptyQueue: [] as Array<() => void>,
  };
  #pumpScheduled = false;
  #rotate = 0;
  /** Why no call can run any more (new and queued calls fail with it). */
  #failure: Error | undefined;
  #closed = false;

  constructor(manager: TargetManager<T>, limits: DispatchLimits) {
    this.#manager = manager;
    this.limits = limits;
  }

  /** Calls waiting for a target. */
  get queued(): number {
    return this.#queue.waiting;
  }

  get failure(): Error | undefined {
    return this.#failure;
  }

  /** Starts a call: refused at once, or queued until a target takes it. */
  call(method: string, param: unknown, options: CallOptions | undefined): PoolCall {
    const call = new PoolCall(method, param, options, activeContext());
    const refusal = badTimeout(options?.timeout) ?? this.#failure ??
      (this.#closed ? new PoolClosedError(`The pool is closed: cannot call "${method}"`) : (
        this.hasRoom() ? undefined : new PoolQueueFullError(this.limits.maxQueued)
      ));
    const signal = options?.signal;
    if (refusal !== undefined || signal?.aborted) {
      this.counts.failed++;
      call.fail(refusal ?? signal!.reason);
      return call;
    }
    this.#enqueue(call, false);
    return call;
  }

  /** New calls are refused with `PoolClosedError`; queued ones still run. */
  close(): void {
    this.#closed = true;
    this.#wake();
  }

  /** No call can run any more: new calls, and those waiting, fail with `error`. */
  fail(error: Error): void {
    this.#failure = error;
    this.failQueued(error);
  }

  /** Fails every waiting call with `error`. */
  failQueued(error: unknown): void {
    for (const call of this.#queue.clear()) {
      this.counts.failed++;
      call.fail(error);
    }
    this.#wake();
  }

  /**
   * Whether a call made now would find room (targets' free places, starting ones, the queue),
   * or be refused at once: a closed or failed pool has room for its refusals.
   */
  hasRoom(): boolean {
    if (this.#closed || this.#failure !== undefined) return true;
    const { concurrency, maxQueued } = this.limits;
    let free = this.#manager.startingCapacity();
    for (const target of this.#manager.targets()) {
      if (target.open) free += Math.max(0, concurrency - target.inFlight);
    }
    return this.#queue.waiting < maxQueued + free;
  }

  /** Resolves once a call made now would find room. */
  waitForRoom(): Promise<void> {
    if (this.hasRoom()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.room.push(resolve));
  }

  /** Resolves once no call is queued or on a target. */
  drain(): Promise<void> {
    if (this.#idle()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.idle.push(resolve));
  }

  /** Resolves once no call waits in the queue. */
  queueEmpty(): Promise<void> {
    if (this.#queue.waiting === 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.emptyQueue.push(resolve));
  }

  /** Targets changed (one became ready, or free): hand them waiting calls soon. */
  schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    queueMicrotask(() => {
      this.#pumpScheduled = false;
      this.#pump();
    });
  }

  /** Queues `call` (at the front: a retry); while it waits, its signal and deadline apply. */
  #enqueue(call: PoolCall, front: boolean): void {
    const { method, options } = call;
    const signal = options?.signal;
    const onAbort = () => this.#dropQueued(call, signal!.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    const remaining = call.remainingTime();
    const unarm = fireAt(
      performance.now() + remaining,
      () => this.#dropQueued(call, new DeadlineExceededError(method, options!.timeout!)),
    );
    call.waiting = {
      unlisten: () => {
        signal?.removeEventListener("abort", onAbort);
        unarm();
      },
      drop: (reason) => this.#dropQueued(call, reason),
    };
    if (front) this.#queue.pushFront(call);
    else this.#queue.push(call);
    this.schedulePump();
  }

  #pump(): void {
    for (let call = this.#queue.peek(); call !== undefined; call = this.#queue.peek()) {
      const target = this.#leastLoaded();
      if (target === undefined) break;
      this.#queue.take();
      this.#dispatch(call, target);
    }
    this.#queue.compact();
    if (this.#queue.waiting > 0 && this.#failure === undefined) this.#manager.needed?.();
    this.#wake();
  }

  #leastLoaded(): T | undefined {
    const targets = this.#manager.targets();
    const n = targets.length;
    const concurrency = this.limits.concurrency;
    // Start the scan at a rotating position so that ties spread over the targets.
    const offset = this.#rotate++ % Math.max(1, n);
    let best: T | undefined;
    for (let i = 0; i < n; i++) {
      const target = targets[(offset + i) % n];
      if (!target.open || target.inFlight >= concurrency) continue;
      if (best === undefined || target.inFlight < best.inFlight) best = target;
      if (best.inFlight === 0) break;
    }
    return best;
  }

  #dispatch(call: PoolCall, target: T): void {
    call.waiting?.unlisten();
    call.waiting = undefined;
    const remaining = call.remainingTime();
    if (remaining <= 0) {
      this.counts.failed++;
      call.fail(new DeadlineExceededError(call.method, call.options!.timeout!));
      return;
    }
    let param: unknown;
    try {
      param = call.nextParam();
    } catch (error) {
      this.counts.failed++;
      call.fail(error);
      return;
    }
    target.inFlight++;
    this.counts.inFlight++;
    call.attempts++;
    if (this.limits.retryable.has(call.method)) {
      // Every attempt of a call the pool may send again carries one key and its number, so
      // its handler can tell a retry from a new call (ctx.key, ctx.attempt).
      call.options = { ...call.options, key: call.options?.key ?? crypto.randomUUID() };
    }
    // The attempts the pool counts (one lost with the connection under every target is not
    // spent, so its number comes again), after any the caller made itself.
    const meta = call.options?.key === undefined
      ? undefined
      : { attempt: (call.options.attempt ?? 1) + call.attempts - 1 };
    const options = remaining === Infinity && meta === undefined
      ? call.options
      : { ...call.options, ...meta, ...(remaining !== Infinity && { timeout: remaining }) };
    const inner = inContext(
      call.context,
      () => this.#manager.send(target, call.method, param, options),
    );
    call.run(inner, (ok, error) => this.#finished(call, target, ok, error));
  }

  /** A call left its target: count it, retry it, or say how it settles; free the target. */
  #finished(call: PoolCall, target: T, ok: boolean, error: unknown): boolean | Error {
    let verdict: boolean | Error = false;
    let lost: boolean | "unspent" = false;
    if (ok) this.counts.completed++;
    else {
      // The manager takes a lost target out now, so the retry cannot land on it again.
      lost = this.#manager.lost(target, error);
      if (lost === "unspent") call.attempts--;
      const { retryable, maxAttempts } = this.limits;
      if (
        lost && retryable.has(call.method) && !call.streaming && call.attempts < maxAttempts &&
        this.#failure === undefined && !call.cancelled
      ) {
        verdict = call.replayable
          ? true
          : new CallNotReplayableError(call.method, { cause: error });
      }
      if (verdict === true) {
        this.counts.retried++;
        this.#manager.retrying?.(target, call, error);
        // Ahead of the queue: it was made before anything waiting there.
        this.#enqueue(call, true);
      } else this.counts.failed++;
    }
    // The target's channel fails a call whose deadline is within a millisecond: by this
    // side's clock the deadline may be still ahead, but the caller gave up all the same.
    const cancelled = call.cancelled || (!ok && error instanceof DeadlineExceededError);
    const busy = !lost && cancelled ? this.#manager.afterCancel?.(target) : undefined;
    if (busy === undefined) this.#release(target, ok);
    else busy.finally(() => this.#release(target, ok));
    return verdict;
  }

  #release(target: T, ok: boolean): void {
    target.inFlight--;
    this.counts.inFlight--;
    this.#manager.released(target, ok);
    this.schedulePump();
  }

  #dropQueued(call: PoolCall, reason: unknown): void {
    if (call.done || call.dispatched) return;
    this.counts.failed++;
    this.#queue.cancelled();
    call.fail(reason);
    this.#wake();
  }

  #idle(): boolean {
    return this.counts.inFlight === 0 && this.#queue.waiting === 0;
  }

  #wake(): void {
    const waiters = this.#waiters;
    if (waiters.room.length > 0 && this.hasRoom()) {
      for (const wake of waiters.room.splice(0)) wake();
    }
    if (waiters.idle.length > 0 && this.#idle()) {
      for (const wake of waiters.idle.splice(0)) wake();
    }
    if (waiters.emptyQueue.length > 0 && this.#queue.waiting === 0) {
      for (const wake of waiters.emptyQueue.splice(0)) wake();
    }
  }
}

/** The RangeError of a call's `timeout` that is no duration, as a worker's channel words it. */
function badTimeout(timeout: number | undefined): RangeError | undefined {
  if (timeout === undefined) return undefined;
  try {
    positiveOption("timeout", timeout);
    return undefined;
  } catch (error) {
    return error as RangeError;
  }
}

// The pool's queue of calls waiting for a worker: first in, first out, with a retried call
// put back at the front. A call aborted while it waits stays in the array until it reaches
// the front (removing it from the middle would cost a copy), but stops counting as waiting.

/** A FIFO of items that may be settled (`done`) while they wait. */
export class CallQueue<T extends { readonly done: boolean }> {
  /** Items still waiting (settled ones excluded). */
  waiting = 0;
  #items: T[] = [];
  #head = 0;

  /** Adds `item` at the back. */
  push(item: T): void {
    this.#items.push(item);
    this.waiting++;
  }

  /** Adds `item` at the front. */
  pushFront(item: T): void {
    this.#items.splice(this.#head, 0, item);
    this.waiting++;
  }

  /** The first item still waiting, left in place; settled items before it are dropped. */
  peek(): T | undefined {
    const items = this.#items;
    while (this.#head < items.length && items[this.#head].done) this.#head++;
    return items[this.#head];
  }

  /** Takes the item {@linkcode peek} returned. */
  take(): void {
    this.#head++;
    this.waiting--;
  }

  /** An item settled while waiting (it is dropped when it reaches the front). */
  cancelled(): void {
    this.waiting--;
  }

  /** Releases the memory of taken items, now and then (amortised O(1) per item). */
  compact(): void {
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Empties the queue, returning the items still waiting. */
  clear(): T[] {
    const left = this.#items.slice(this.#head).filter((item) => !item.done);
    this.#items = [];
    this.#head = 0;
    this.waiting = 0;
    return left;
  }
}

// A call made through a pool: queued until a target (a worker, a NATS connection) is free,
// then run as that target's call. Awaitable and async-iterable like a channel call, and like it
// the first use decides which face it has, whenever that use comes: before it is dispatched,
// or after (a stream made before an `await` and iterated after it). The face is which of the
// two deferreds exists. The dispatcher hears when the target's call is over from the call
// itself (`whenOver`), not from a face, so the target is released and a lost call retried
// whatever the caller did with it.
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
  /** The telemetry context the call was made in, which its attempts run in (if tracing). */
  readonly context: OtelContext | undefined;
  readonly #param: unknown;
  readonly #deadline: number;
  attempts = 0;
  /** Settled for good: failed before a target took it, or its last target call is over. */
  done = false;
  /** On a target now. */
  dispatched = false;
  /**
   * While it waits in the queue: removes the listeners of its signal and deadline, or drops
   * it from the queue (failed with `reason`, counted as the dispatcher counts a drop).
   */
  waiting: { unlisten(): void; drop(reason: unknown): void } | undefined;
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

  constructor(
    method: string,
    param: unknown,
    options: CallOptions | undefined,
    context?: OtelContext,
  ) {
    super();
    this.method = method;
    this.#param = param;
    this.options = options;
    this.context = context;
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
      // Waiting for a target (its first, or its next attempt): the queue lets it go, so that
      // it stops counting as waiting and taking a place.
      if (this.waiting !== undefined) this.waiting.drop(error);
      else this.fail(error);
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
    this.waiting?.unlisten();
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

// When a pool restarts a crashed worker: exponential backoff from `restartDelay` up to
// `maxRestartDelay`, and a crash loop (more than `maxRestarts` crashes within
// `restartWindow`, or as many starts in a row that all failed, however slowly: a worker that
// fails only at its handshake timeout never piles up crashes in a window) stops restarting.
// Pure: the caller passes the time, so a test drives it with a fake clock.
/** The restart policy's settings, in milliseconds and counts. */
export interface RestartPolicyOptions {
  /** The delay before the first restart; it doubles with each crash within the window. */
  restartDelay: number;
  /** The longest delay before a restart. */
  maxRestartDelay: number;
  /** How many crashes within `restartWindow` are survived; one more is a crash loop. */
  maxRestarts: number;
  /** The window crashes are counted in. */
  restartWindow: number;
}

/**
 * What to do after a crash: restart after `delay` ms, or give up (a crash loop of `crashes`
 * within `window` ms).
 */
export type RestartDecision =
  | { restart: true; delay: number; crashes: number }
  | { restart: false; crashes: number; window: number };

/** Counts crashes in a sliding window and says when, and whether, to restart. */
export class RestartPolicy {
  readonly restartDelay: number;
  readonly maxRestartDelay: number;
  readonly maxRestarts: number;
  readonly restartWindow: number;
  /** When the crashes within the window happened, oldest first. */
  #crashTimes: number[] = [];
  /** When each start failed since a worker last started, oldest first. */
  #failedStarts: number[] = [];

  /** @throws {RangeError} When a setting is out of range. */
  constructor(options: RestartPolicyOptions) {
    this.restartDelay = numberOption("restartDelay", options.restartDelay, 0);
    this.maxRestartDelay = numberOption("maxRestartDelay", options.maxRestartDelay, 0);
    this.maxRestarts = integerOption("maxRestarts", options.maxRestarts, 0);
    this.restartWindow = numberOption("restartWindow", options.restartWindow, 0);
  }

  /** A worker started: failed starts before it no longer count. */
  started(): void {
    this.#failedStarts = [];
  }

  /**
   * Records a crash at time `now` (ms, any monotonic clock) and decides. `starting`: the
   * worker failed to start.
   */
  crashed(now: number, starting = false): RestartDecision {
    this.#crashTimes = this.#crashTimes.filter((t) => now - t < this.restartWindow);
    this.#crashTimes.push(now);
    const crashes = this.#crashTimes.length;
    if (crashes > this.maxRestarts) return { restart: false, crashes, window: this.restartWindow };
    if (starting) this.#failedStarts.push(now);
    const failed = this.#failedStarts;
    if (failed.length > this.maxRestarts) {
      return { restart: false, crashes: failed.length, window: Math.round(now - failed[0]) };
    }
    const delay = Math.min(this.restartDelay * 2 ** (crashes - 1), this.maxRestartDelay);
    return { restart: true, delay, crashes };
  }
}
