/**
 * A pool of worker processes, or threads (`thread: true`), behind one typed `remote`:
 * {@linkcode WorkerPool}.
 *
 * Calls go to the least-loaded worker; beyond the workers' capacity they wait in a bounded
 * queue. Crashed workers are restarted with exponential backoff, and a crash loop fails the
 * pool with `CrashLoopError` instead of spinning. Calls in flight on a crashed worker fail
 * with `WorkerExitedError`, unless their method is listed as safe to retry.
 *
 * @example
 * ```ts
 * import { WorkerPool } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 * import type { EchoApi } from "../examples/_echo_worker.ts";
 *
 * await using pool = new WorkerPool<EchoApi>(
 *   new URL("../examples/_echo_worker.ts", import.meta.url),
 *   { size: 2 },
 * );
 * const results = await Promise.all([1, 2, 3, 4].map((n) => pool.remote.echo(n)));
 * assert.deepEqual(results, [1, 2, 3, 4]);
 * assert.equal(pool.stats.completed, 4);
 * ```
 *
 * @module
 */

import { integerOption, numberOption } from "../_options.ts";
import { channelCodecs, DEFAULT_DRAIN_TIMEOUT } from "../channel/channel.ts";
import { ConnectionClosedError, HandshakeError } from "../channel/errors.ts";
import { remoteProxy } from "../channel/_remote.ts";
import type {
  CallOptions,
  CheckedHandlers,
  MethodName,
  ParamOf,
  RemoteMethod,
} from "../channel/types.ts";
import {
  Dispatcher,
  type InnerCall,
  observed,
  RestartPolicy,
  type Target,
  type TargetManager,
} from "./_dispatcher.ts";
import { moduleSpecifier } from "./spawn_worker_options.ts";
import { checkThreadOptions } from "./_spawn_thread.ts";
import { CrashLoopError, PoolClosedError, WorkerExitedError } from "./errors.ts";
import { spawnWorker, type SpawnWorkerOptions, type WorkerCommand } from "./spawn_worker.ts";
import type { WorkerHandle } from "./worker_handle.ts";
import { timerDelay, within } from "../_runtime.ts";

/** The default {@linkcode WorkerPoolOptions.concurrency}: 1 call per worker at a time. */
export const DEFAULT_POOL_CONCURRENCY = 1;
/** The default {@linkcode WorkerPoolOptions.maxQueued}: 1024 waiting calls. */
export const DEFAULT_POOL_MAX_QUEUED = 1024;
/** The default {@linkcode WorkerPoolOptions.restartDelay}: 100 ms. */
export const DEFAULT_RESTART_DELAY = 100;
/** The default {@linkcode WorkerPoolOptions.maxRestartDelay}: 5 s. */
export const DEFAULT_MAX_RESTART_DELAY = 5_000;
/** The default {@linkcode WorkerPoolOptions.maxRestarts}: 5 within the window. */
export const DEFAULT_MAX_RESTARTS = 5;
/** The default {@linkcode WorkerPoolOptions.restartWindow}: 30 s. */
export const DEFAULT_RESTART_WINDOW = 30_000;
/** The default {@linkcode WorkerPoolOptions.maxAttempts}: 3 tries for a retryable call. */
export const DEFAULT_MAX_ATTEMPTS = 3;
/** The default {@linkcode WorkerPoolOptions.ignoredCancel}: replace the worker. */
export const DEFAULT_IGNORED_CANCEL: "wait" | "replace" = "replace";
/** The default {@linkcode WorkerPoolOptions.cancelGrace}: 1 s. */
export const DEFAULT_CANCEL_GRACE = 1_000;

/**
 * A stream param a pool can send again: an async iterable is consumed by the first attempt,
 * so a call given one is never retried; a function is called for each attempt and returns a
 * fresh iterable (an array, a `Uint8Array` sent as one chunk, or an async iterable), which
 * makes the call retryable.
 *
 * @typeParam T The stream's items.
 *
 * @example
 * ```ts
 * import type { StreamSource } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * const chunks = [new Uint8Array([1, 2]), new Uint8Array([3])];
 * const replayable: StreamSource<Uint8Array> = () => chunks;
 * assert.equal(typeof replayable, "function");
 * ```
 */
export type StreamSource<T> =
  | AsyncIterable<T>
  | (() => AsyncIterable<T> | Iterable<T> | (T extends Uint8Array ? Uint8Array : never));

/**
 * The `remote` of a pool: as a channel's `remote` (`RemoteOf`), except that a method whose
 * handler takes a stream also takes a {@linkcode StreamSource}, which a retry can send again.
 *
 * @typeParam Api The handler interface the pool's workers or instances serve.
 *
 * @example
 * ```ts
 * import type { PoolRemoteOf } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * type Api = { size(chunks: AsyncIterable<Uint8Array>): number };
 * const remote: Pick<PoolRemoteOf<Api>, "size"> = {
 *   size: async (source) => (typeof source === "function" ? 1 : 0),
 * };
 * assert.equal(await remote.size(() => [new Uint8Array(3)]), 1);
 * ```
 */
export type PoolRemoteOf<Api> = {
  readonly [
    // An `any` param (0 extends 1 & any) stays as it is rather than narrowing to a stream.
    K in MethodName<Api>
  ]: 0 extends 1 & ParamOf<Api[K]> ? RemoteMethod<Api[K], K>
    : [ParamOf<Api[K]>] extends [AsyncIterable<infer Item>]
      ? RemoteMethod<Api[K], K> extends (param: never, options?: CallOptions) => infer R
        ? (param: StreamSource<Item>, options?: CallOptions) => R
      : RemoteMethod<Api[K], K>
    : RemoteMethod<Api[K], K>;
};

/**
 * Options for {@linkcode WorkerPool}: the pool's own, and those every worker is spawned
 * with (see `SpawnWorkerOptions`).
 *
 * @typeParam Api The handler interface the workers serve.
 * @typeParam Local The handler object this side serves to each worker.
 */
export interface WorkerPoolOptions<Api extends object = object, Local extends object = object>
  extends SpawnWorkerOptions<Local> {
  /**
   * How many workers to run.
   *
   * @default {navigator.hardwareConcurrency} (the available cores)
   */
  size?: number;
  /**
   * How many calls one worker runs at once. 1 suits CPU-bound handlers; more hides the
   * round trip of short calls and suits handlers that wait on I/O.
   *
   * @default {DEFAULT_POOL_CONCURRENCY} (1)
   */
  concurrency?: number;
  /**
   * How many calls may wait for a worker; a call beyond it fails with
   * `PoolQueueFullError`. `waitForRoom()` waits until there is room.
   *
   * @default {DEFAULT_POOL_MAX_QUEUED} (1024)
   */
  maxQueued?: number;
  /**
   * Methods that are safe to run again (idempotent): a call of one of these that fails
   * because its worker crashed is retried on another worker, up to `maxAttempts` tries.
   * A call being read as a stream when its worker crashed is not retried, nor one whose
   * stream param was an iterator (the lost attempt consumed it): that one fails with
   * `CallNotReplayableError`; pass a function that returns a fresh iterable instead (see
   * {@linkcode StreamSource}).
   *
   * @default {[]}
   */
  retryable?: readonly MethodName<Api>[];
  /**
   * How many times a retryable call is tried in all.
   *
   * @default {DEFAULT_MAX_ATTEMPTS} (3)
   */
  maxAttempts?: number;
  /**
   * The delay before the first restart of a crashed worker, in milliseconds; it doubles with
   * each crash within `restartWindow`, up to `maxRestartDelay`.
   *
   * @default {DEFAULT_RESTART_DELAY} (100)
   */
  restartDelay?: number;
  /**
   * The longest delay before a restart, in milliseconds.
   *
   * @default {DEFAULT_MAX_RESTART_DELAY} (5000)
   */
  maxRestartDelay?: number;
  /**
   * How many crashes (a worker that exits on its own, or fails to start) the pool survives
   * within `restartWindow`; one more fails the pool with `CrashLoopError`. So does one more
   * failed start in a row, however long they took (a module that never calls `serveWorker()`
   * fails each start only at its handshake timeout).
   *
   * @default {DEFAULT_MAX_RESTARTS} (5)
   */
  maxRestarts?: number;
  /**
   * The window crashes are counted in, in milliseconds.
   *
   * @default {DEFAULT_RESTART_WINDOW} (30000)
   */
  restartWindow?: number;
  /**
   * Replace a worker after it has finished this many calls (to contain slow leaks).
   *
   * @default {Infinity}
   */
  maxCallsPerWorker?: number;
  /**
   * Stop a worker that has been idle this long, in milliseconds; it is started again when
   * calls need it.
   *
   * @default {Infinity}
   */
  idleTimeout?: number;
  /**
   * What to do with a worker whose cancelled call keeps it busy: a cancelled call (its
   * signal, `cancel()`, its timeout) frees its place only once the worker has answered the
   * cancel, which a synchronous handler does only when it returns. `"replace"` kills such a
   * worker after `cancelGrace` and starts another (its other calls fail as in a crash, and
   * retryable ones run again); `"wait"` keeps the place busy until the worker answers.
   *
   * `"replace"` by default, as Piscina and workerpool terminate a worker whose task is
   * aborted: a pool's handlers are mostly CPU-bound (the default `concurrency` is 1), and
   * such a handler holds its core until it returns, so only a new worker gives the place
   * back; the grace period spares the restart when the handler does watch its signal.
   *
   * @default {DEFAULT_IGNORED_CANCEL} ("replace")
   */
  ignoredCancel?: "wait" | "replace";
  /**
   * How long a worker has to answer a cancel before `ignoredCancel: "replace"` replaces it,
   * in milliseconds.
   *
   * @default {DEFAULT_CANCEL_GRACE} (1000)
   */
  cancelGrace?: number;
}

/**
 * What a pool is doing, and has done: {@linkcode WorkerPool.stats}.
 *
 * @example
 * ```ts
 * import type { WorkerPoolStats } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * const idle: WorkerPoolStats = {
 *   workers: 2, starting: 0, inFlight: 0, queued: 0,
 *   completed: 10, failed: 0, retried: 0, crashes: 0, restarts: 0, recycled: 0,
 *   replaced: 0,
 * };
 * assert.equal(idle.inFlight + idle.queued, 0);
 * ```
 */
export interface WorkerPoolStats {
  /** Workers running and ready for calls. */
  workers: number;
  /** Workers being started (or waiting to restart). */
  starting: number;
  /** Calls running on a worker. */
  inFlight: number;
  /** Calls waiting for a worker. */
  queued: number;
  /** Calls that finished with a result (streams: that ended). */
  completed: number;
  /** Calls that failed, for whatever reason. */
  failed: number;
  /** Calls tried again after their worker crashed. */
  retried: number;
  /** Workers that exited on their own or failed to start. */
  crashes: number;
  /** Workers started to replace crashed ones. */
  restarts: number;
  /** Workers replaced after `maxCallsPerWorker`, or stopped after `idleTimeout`. */
  recycled: number;
  /** Workers replaced because a cancelled call kept them busy past `cancelGrace`. */
  replaced: number;
}

const STARTING = 0;
const READY = 1;
/** No new calls: finishing its calls before it is closed. */
const RETIRING = 2;
/** Waiting out the backoff before it is started. */
const WAITING = 3;
const GONE = 4;

/** One place in the pool: a worker, or one about to be. */
class Slot<Api extends object> implements Target {
  state = STARTING;
  handle: WorkerHandle<Api> | undefined;
  inFlight = 0;
  calls = 0;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** The pool stopped it (idle, recycled, closing, replaced): its exit is no crash. */
  stopped = false;
  /** The pool killed it (a cancelled call kept it busy): its other calls may run again. */
  killed = false;

  get open(): boolean {
    return this.state === READY;
  }
}

/**
 * A pool of worker processes that serve the same module, called through one typed `remote`.
 *
 * The workers start at once. Each call goes to the ready worker with the fewest calls in
 * flight (up to `concurrency` each); when all are busy it waits in a queue of at most
 * `maxQueued` calls. A stream call holds its worker until the stream ends.
 *
 * Like a channel call, a pool call is awaited or iterated, and the first use decides which,
 * whenever it comes: a stream may be made, an `await` pass, and then be iterated. Its items
 * wait in a bounded buffer meanwhile, and the worker stays busy until the stream ends.
 *
 * A call's `timeout` counts from the moment it is made, queueing included; its `signal`
 * removes it from the queue. A cancelled call frees its worker once the worker has answered
 * the cancel (see `ignoredCancel` for one that does not).
 *
 * @typeParam Api The handler interface the workers serve.
 * @typeParam Local The handler object this side serves to each worker (call-backs).
 *
 * @example A pool of thread workers
 * ```ts
 * import { WorkerPool } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 * import type { EchoApi } from "../examples/_echo_worker.ts";
 *
 * await using pool = new WorkerPool<EchoApi>(
 *   new URL("../examples/_echo_worker.ts", import.meta.url),
 *   { thread: true, size: 2 },
 * );
 * assert.deepEqual(await Promise.all([1, 2, 3].map((n) => pool.remote.echo(n))), [1, 2, 3]);
 * ```
 *
 * @example A crash is survived; a retryable call runs again on the new worker
 * ```ts
 * import { WorkerPool } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 * import type { EchoApi } from "../examples/_echo_worker.ts";
 *
 * const pool = new WorkerPool<EchoApi>(
 *   new URL("../examples/_echo_worker.ts", import.meta.url),
 *   { size: 1, stderr: "discard", retryable: ["echo"] },
 * );
 * await assert.rejects(pool.remote.exit(1), { name: "WorkerExitedError" });
 * assert.equal(await pool.remote.echo("back"), "back");
 * assert.equal(pool.stats.crashes, 1);
 * assert.equal(pool.stats.restarts, 1);
 * await pool.close();
 * ```
 */
export class WorkerPool<Api extends object, Local extends CheckedHandlers<Local> = object>
  implements AsyncDisposable {
  /** The workers' methods; see the class description for how calls are dispatched. */
  readonly remote: PoolRemoteOf<Api>;
  /** How many workers the pool runs. */
  readonly size: number;
  /** Starts one worker. */
  readonly #spawn: () => Promise<WorkerHandle<Api>>;
  readonly #limits: PoolLimits;
  readonly #restarts: RestartPolicy;
  readonly #dispatcher: Dispatcher<Slot<Api>>;
  readonly #counts = { crashes: 0, restarts: 0, recycled: 0, replaced: 0 };
  /** Who waits for every worker to start. */
  readonly #startWaiters: PromiseWithResolvers<void>[] = [];
  /** Every exit and close of a worker, awaited by close(). */
  readonly #exits = new Set<Promise<unknown>>();
  #slots: Slot<Api>[] = [];
  #closing: Promise<void> | undefined;
  /** unref() was called: idle workers and timers do not keep the program alive. */
  #unref = false;

  /**
   * Creates the pool and starts its workers.
   *
   * @param worker The worker module (path or URL), or a command; as for `spawnWorker`.
   * @param options Pool size, concurrency, queue, restart and recycling policy, and the
   * options each worker is spawned with; see {@linkcode WorkerPoolOptions}.
   * @throws {RangeError} When a size, limit or delay is out of range.
   * @throws {TypeError} When the module is a relative path string (pass a URL), or an option
   * does not fit thread workers (`thread: true`).
   * @throws {ThreadPermissionsError} When thread workers are given `permissions` and Deno's
   * worker-options feature is not on.
   */
  constructor(worker: string | URL | WorkerCommand, options: WorkerPoolOptions<Api, Local> = {}) {
    const {
      size = navigator.hardwareConcurrency,
      concurrency = DEFAULT_POOL_CONCURRENCY,
      maxQueued = DEFAULT_POOL_MAX_QUEUED,
      retryable = [],
      maxAttempts = DEFAULT_MAX_ATTEMPTS,
      restartDelay = DEFAULT_RESTART_DELAY,
      maxRestartDelay = DEFAULT_MAX_RESTART_DELAY,
      maxRestarts = DEFAULT_MAX_RESTARTS,
      restartWindow = DEFAULT_RESTART_WINDOW,
      maxCallsPerWorker = Infinity,
      idleTimeout = Infinity,
      ignoredCancel = DEFAULT_IGNORED_CANCEL,
      cancelGrace = DEFAULT_CANCEL_GRACE,
      ...spawnOptions
    } = options;
    if (spawnOptions.thread) checkThreadOptions(worker, spawnOptions as SpawnWorkerOptions);
    else if (typeof worker === "string" || worker instanceof URL) moduleSpecifier(worker);
    if (ignoredCancel !== "wait" && ignoredCancel !== "replace") {
      throw new TypeError(
        `ignoredCancel must be "wait" or "replace", not ${JSON.stringify(ignoredCancel)}`,
      );
    }
    channelCodecs(options);
    this.size = integerOption("size", size, 1);
    this.#limits = {
      concurrency: integerOption("concurrency", concurrency, 1),
      maxCallsPerWorker: numberOption("maxCallsPerWorker", maxCallsPerWorker, 1),
      idleTimeout: numberOption("idleTimeout", idleTimeout, 0),
      ignoredCancel,
      cancelGrace: numberOption("cancelGrace", cancelGrace, 0),
      drainTimeout: spawnOptions.drainTimeout ?? DEFAULT_DRAIN_TIMEOUT,
    };
    this.#restarts = new RestartPolicy({
      restartDelay,
      maxRestartDelay,
      maxRestarts,
      restartWindow,
    });
    this.#spawn = () => spawnWorker<Api, Local>(worker, spawnOptions);
    this.#dispatcher = new Dispatcher(this.#targets(), {
      concurrency: this.#limits.concurrency,
      maxQueued: integerOption("maxQueued", maxQueued, 0),
      maxAttempts: integerOption("maxAttempts", maxAttempts, 1),
      retryable: new Set(retryable),
    });
    const dispatcher = this.#dispatcher;
    this.remote = remoteProxy<Api>((method, param, callOptions) =>
      dispatcher.call(method, param, callOptions)
    ) as unknown as PoolRemoteOf<Api>;
    for (let i = 0; i < this.size; i++) this.#start(new Slot());
    const name = typeof worker === "string" || worker instanceof URL
      ? String(worker)
      : String(worker.command);
    observed(this, "worker", name, () => this.#closing === undefined);
  }

  /** The pool's counters at this moment; see {@linkcode WorkerPoolStats}. */
  get stats(): WorkerPoolStats {
    let workers = 0;
    let starting = 0;
    for (const slot of this.#slots) {
      if (slot.state === READY || slot.state === RETIRING) workers++;
      else if (slot.state === STARTING || slot.state === WAITING) starting++;
    }
    return {
      workers,
      starting,
      ...this.#dispatcher.counts,
      ...this.#counts,
      queued: this.#dispatcher.queued,
    };
  }

  /**
   * Resolves once every worker has started (the pool works before that: calls wait).
   *
   * @returns A promise that rejects with `CrashLoopError` if the workers keep failing to
   * start, with the spawn's own error if this process cannot spawn them at all (e.g.
   * `Deno.errors.NotCapable` without `--allow-run`), or with `PoolClosedError` if the pool is
   * closed first.
   */
  started(): Promise<void> {
    const failure = this.#dispatcher.failure;
    if (failure) return Promise.reject(failure);
    if (this.#closing) return Promise.reject(new PoolClosedError("The pool is closed"));
    if (this.#allReady()) return Promise.resolve();
    const waiter = Promise.withResolvers<void>();
    this.#startWaiters.push(waiter);
    return waiter.promise;
  }

  /**
   * Resolves when a call made now would not find the queue full: the way to apply
   * backpressure to a producer of calls.
   *
   * @returns A promise that resolves once there is room (at once if there is).
   */
  waitForRoom(): Promise<void> {
    return this.#dispatcher.waitForRoom();
  }

  /**
   * Resolves once no call is queued or in flight. The pool stays open.
   *
   * @returns A promise that resolves when the pool is idle.
   */
  drain(): Promise<void> {
    return this.#dispatcher.drain();
  }

  /**
   * Closes the pool: new calls fail with `PoolClosedError`, queued calls still run (those
   * that no worker takes within `drainTimeout` fail with `PoolClosedError`), and every worker
   * is closed once the queue is empty; closing a worker lets its calls in flight finish (up to
   * `drainTimeout`, see `WorkerHandle.close`). Never rejects.
   *
   * @returns A promise that resolves once every worker has exited.
   */
  close(): Promise<void> {
    return this.#closing ??= this.#close();
  }

  /**
   * Lets this program exit while the pool is idle: its workers (those running and those it
   * starts later) keep the program alive only while a call is in flight on them, and its
   * idle timers not at all. `close()` is still the clean way to stop the pool; without it
   * the workers exit once this program has (their stdin ends).
   *
   * @example
   * ```ts
   * import { WorkerPool } from "@conduit/ipc/workers";
   * import assert from "node:assert/strict";
   * import type { EchoApi } from "../examples/_echo_worker.ts";
   *
   * const pool = new WorkerPool<EchoApi>(
   *   new URL("../examples/_echo_worker.ts", import.meta.url),
   *   { size: 1 },
   * );
   * pool.unref();
   * // A call in flight still keeps the program alive until it is answered.
   * assert.equal(await pool.remote.echo("still answered"), "still answered");
   * await pool.close();
   * ```
   */
  unref(): void {
    this.#unref = true;
    for (const slot of this.#slots) {
      slot.handle?.unref();
      if (slot.state === READY && slot.timer !== undefined) Deno.unrefTimer(slot.timer);
    }
  }

  /** Undoes {@linkcode unref}: the pool keeps the program alive until it is closed. */
  ref(): void {
    this.#unref = false;
    for (const slot of this.#slots) {
      slot.handle?.ref();
      if (slot.state === READY && slot.timer !== undefined) Deno.refTimer(slot.timer);
    }
  }

  /** Closes the pool (`await using pool = …`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  // ---------------------------------------------------------------- the dispatcher's targets

  #targets(): TargetManager<Slot<Api>> {
    return {
      targets: () => this.#slots,
      startingCapacity: () => {
        // Places stopped for idleness count too: a call that waits starts them (`needed`).
        let starting = Math.max(0, this.size - this.#slots.length);
        for (const slot of this.#slots) {
          if (slot.state === STARTING || slot.state === WAITING) starting++;
        }
        return starting * this.#limits.concurrency;
      },
      send: (slot, method, param, options) => {
        clearTimeout(slot.timer);
        slot.timer = undefined;
        return (slot.handle!.remote as unknown as RemoteFunctions)[method](param, options);
      },
      lost: (slot, error) => this.#lost(slot, error),
      released: (slot) => this.#released(slot),
      afterCancel: (slot) => this.#afterCancel(slot),
      // Workers stopped for idleness come back when calls wait.
      needed: () => {
        while (this.#slots.length < this.size) this.#start(new Slot());
      },
    };
  }

  /** A call on `slot` failed: whether its worker is gone (a crash, or the pool killed it). */
  #lost(slot: Slot<Api>, error: unknown): boolean {
    if (!(error instanceof WorkerExitedError)) return false;
    // The handle reports WorkerExitedError only once the process is gone: take the worker
    // out now, before the call is retried, rather than when its exit is processed. Every
    // call the crash took is retried, not only the first to report it (the worker is GONE
    // by the time the others do). A worker the pool stopped itself did not crash.
    if (slot.stopped) return slot.killed;
    if (slot.state !== GONE) this.#crashed(slot, error);
    return true;
  }

  /** A call left `slot`: recycle it, stop it, or arm its idle timer. */
  #released(slot: Slot<Api>): void {
    slot.calls++;
    if (slot.state === READY && slot.calls >= this.#limits.maxCallsPerWorker) {
      this.#retire(slot, true);
    }
    if (slot.state === RETIRING && slot.inFlight === 0) this.#stop(slot);
    if (slot.state === READY && slot.inFlight === 0) this.#armIdle(slot);
  }

  /**
   * A call on `slot` was cancelled: the worker is free of it once it answers a probe sent
   * after the cancel (frames are handled in order, so the cancel was seen first), or, with
   * `ignoredCancel: "replace"`, once it is replaced after `cancelGrace`.
   */
  #afterCancel(slot: Slot<Api>): Promise<void> {
    const handle = slot.handle!;
    const probe = (handle.remote as unknown as RemoteFunctions)[PROBE_METHOD](undefined);
    const answered = new Promise<void>((resolve) => probe.then(() => resolve(), () => resolve()));
    if (this.#limits.ignoredCancel === "wait") return answered;
    const ignoring = within(answered.then(() => false), this.#limits.cancelGrace, true);
    return ignoring.then((ignored) => {
      if (ignored && slot.handle === handle && !slot.stopped) this.#replaceStuck(slot);
      return answered;
    });
  }

  /** Kills a worker a cancelled call keeps busy, and starts another in its place. */
  #replaceStuck(slot: Slot<Api>): void {
    this.#counts.replaced++;
    slot.killed = true;
    const replace = slot.state === READY && !this.#closing && !this.#dispatcher.failure;
    this.#stop(slot, true);
    if (replace) this.#start(new Slot());
  }

  // ---------------------------------------------------------------- workers

  #start(slot: Slot<Api>): void {
    slot.state = STARTING;
    if (!this.#slots.includes(slot)) this.#slots.push(slot);
    const started = this.#spawn().then(
      (handle) => {
        slot.handle = handle;
        if (slot.state === GONE) {
          // The pool closed or failed while the worker started.
          this.#track(handle.close());
          return;
        }
        slot.state = READY;
        this.#restarts.started();
        if (this.#unref) handle.unref();
        this.#track(handle.exited.then((status) => this.#onExit(slot, handle, status)));
        this.#armIdle(slot);
        this.#dispatcher.schedulePump();
        if (this.#allReady()) {
          for (const waiter of this.#startWaiters.splice(0)) waiter.resolve();
        }
      },
      (error) => {
        if (slot.state === GONE) return;
        // A worker that started and failed is a crash; a spawn refused by this process
        // (no permission to run, no such program, bad options) would fail again each time.
        if (error instanceof ConnectionClosedError || error instanceof HandshakeError) {
          this.#crashed(slot, error, true);
        } else {
          this.#slots.splice(this.#slots.indexOf(slot), 1);
          slot.state = GONE;
          this.#fail(error instanceof Error ? error : new Error(String(error)));
        }
      },
    );
    this.#track(started);
  }

  /** A worker exited: expected if the pool stopped it, else a crash. */
  #onExit(slot: Slot<Api>, handle: WorkerHandle<Api>, status: Deno.CommandStatus): void {
    if (slot.state === GONE) return;
    this.#crashed(
      slot,
      new WorkerExitedError({
        worker: handle.name,
        pid: handle.pid,
        thread: handle.thread,
        code: status.code,
        signal: status.signal,
        stderrTail: handle.stderrTail,
      }),
    );
  }

  #crashed(slot: Slot<Api>, error: unknown, starting = false): void {
    this.#counts.crashes++;
    clearTimeout(slot.timer);
    this.#remove(slot);
    // A retiring worker has its replacement already.
    const replace = slot.state !== RETIRING;
    slot.state = GONE;
    if (this.#dispatcher.failure || !replace) return;
    // While closing, a worker is only worth restarting for calls that still wait.
    if (this.#closing && this.#dispatcher.queued === 0) return;
    const decision = this.#restarts.crashed(performance.now(), starting);
    if (!decision.restart) {
      const { crashes, window } = decision;
      this.#fail(
        new CrashLoopError(crashes, this.#restarts.maxRestarts, window, { cause: error }),
      );
      return;
    }
    const replacement = new Slot<Api>();
    replacement.state = WAITING;
    this.#slots.push(replacement);
    replacement.timer = setTimeout(() => {
      replacement.timer = undefined;
      this.#counts.restarts++;
      this.#start(replacement);
    }, timerDelay(decision.delay));
  }

  /** Stops new calls to `slot`; it closes once its calls finish. */
  #retire(slot: Slot<Api>, replace: boolean): void {
    slot.state = RETIRING;
    this.#counts.recycled++;
    if (replace && !this.#closing && !this.#dispatcher.failure) this.#start(new Slot());
  }

  /** Closes a worker the pool no longer needs (kills it, with `kill`). */
  #stop(slot: Slot<Api>, kill = false): void {
    slot.stopped = true;
    clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.state = GONE;
    this.#remove(slot);
    if (slot.handle) this.#track(kill ? slot.handle.kill() : slot.handle.close());
  }

  #remove(slot: Slot<Api>): void {
    const i = this.#slots.indexOf(slot);
    if (i >= 0) this.#slots.splice(i, 1);
  }

  #armIdle(slot: Slot<Api>): void {
    const idleTimeout = this.#limits.idleTimeout;
    if (idleTimeout === Infinity || this.#closing) return;
    clearTimeout(slot.timer);
    slot.timer = setTimeout(() => {
      slot.timer = undefined;
      if (slot.state !== READY || slot.inFlight > 0) return;
      this.#counts.recycled++;
      this.#stop(slot);
    }, timerDelay(idleTimeout));
    if (this.#unref) Deno.unrefTimer(slot.timer);
  }

  #track(promise: Promise<unknown>): void {
    const tracked = promise.catch(() => {}).finally(() => this.#exits.delete(tracked));
    this.#exits.add(tracked);
  }

  // ---------------------------------------------------------------- ending

  /** The pool cannot go on: fail everything waiting, stop every worker. */
  #fail(error: Error): void {
    this.#dispatcher.fail(error);
    for (const waiter of this.#startWaiters.splice(0)) waiter.reject(error);
    for (const slot of [...this.#slots]) this.#stop(slot);
  }

  async #close(): Promise<void> {
    this.#dispatcher.close();
    for (const waiter of this.#startWaiters.splice(0)) {
      waiter.reject(new PoolClosedError("The pool was closed before its workers started"));
    }
    // Queued calls still run, for as long as closing a worker waits for its calls
    // (drainTimeout): workers that never free a place must not hold close() for good. Calls
    // in flight then drain as each worker closes (bounded by drainTimeout and exit timeouts).
    const dispatcher = this.#dispatcher;
    const emptied = (async () => {
      while (dispatcher.queued > 0) await dispatcher.queueEmpty();
      return true;
    })();
    const drainTimeout = this.#limits.drainTimeout;
    if (!await within(emptied, drainTimeout, false)) {
      dispatcher.failQueued(
        new PoolClosedError(
          `The pool closed before the call started: no worker was free within its ` +
            `drainTimeout (${drainTimeout} ms)`,
        ),
      );
    }
    for (const slot of [...this.#slots]) this.#stop(slot);
    while (this.#exits.size > 0) await Promise.all([...this.#exits]);
  }

  #allReady(): boolean {
    // Places stopped for idleness are started when calls need them, not waited for.
    let ready = Math.max(0, this.size - this.#slots.length);
    for (const slot of this.#slots) if (slot.state === READY) ready++;
    return ready >= this.size;
  }
}

/**
 * The method a pool calls to learn that a worker has seen a cancel: no worker serves it, so
 * the answer (method not found) comes as soon as the worker reads its frames again.
 */
const PROBE_METHOD = "conduit.pool.probe";

type RemoteFunctions = Record<string, (param: unknown, options?: CallOptions) => InnerCall>;

/** The pool's own limits, checked once (the dispatcher holds the others). */
interface PoolLimits {
  concurrency: number;
  maxCallsPerWorker: number;
  idleTimeout: number;
  ignoredCancel: "wait" | "replace";
  cancelGrace: number;
  /** How long close() lets queued calls wait for a worker (the workers' drainTimeout). */
  drainTimeout: number;
}
