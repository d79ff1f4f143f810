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
import { ConnectionClosedError, DeadlineExceededError, HandshakeError } from "../channel/errors.ts";
import { remoteProxy } from "../channel/_remote.ts";
import type { CallOptions, CheckedHandlers, MethodName, RemoteOf } from "../channel/types.ts";
import { CallQueue } from "./_call_queue.ts";
import { moduleSpecifier } from "./_module_specifier.ts";
import { checkThreadOptions } from "./_spawn_thread.ts";
import { type InnerCall, PoolCall } from "./_pool_call.ts";
import { RestartPolicy } from "./_restart_policy.ts";
import {
  CrashLoopError,
  PoolClosedError,
  PoolQueueFullError,
  WorkerExitedError,
} from "./errors.ts";
import { spawnWorker, type SpawnWorkerOptions, type WorkerCommand } from "./spawn_worker.ts";
import type { WorkerHandle } from "./worker_handle.ts";

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
   * A call being read as a stream when its worker crashed is not retried.
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
   * within `restartWindow`; one more fails the pool with `CrashLoopError`.
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
}

const STARTING = 0;
const READY = 1;
/** No new calls: finishing its calls before it is closed. */
const RETIRING = 2;
/** Waiting out the backoff before it is started. */
const WAITING = 3;
const GONE = 4;

/** One place in the pool: a worker, or one about to be. */
class Slot<Api extends object> {
  state = STARTING;
  handle: WorkerHandle<Api> | undefined;
  inFlight = 0;
  calls = 0;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** The pool stopped it (idle, recycled, closing): its exit is no crash. */
  stopped = false;
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
 * removes it from the queue.
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
  readonly remote: RemoteOf<Api>;
  /** How many workers the pool runs. */
  readonly size: number;
  /** Starts one worker. */
  readonly #spawn: () => Promise<WorkerHandle<Api>>;
  readonly #limits: PoolLimits;
  readonly #restarts: RestartPolicy;
  readonly #queue = new CallQueue<PoolCall>();
  readonly #counts: Omit<WorkerPoolStats, "workers" | "starting" | "queued"> = {
    inFlight: 0,
    completed: 0,
    failed: 0,
    retried: 0,
    crashes: 0,
    restarts: 0,
    recycled: 0,
  };
  /** Who waits for what: every worker started, room in the queue, idle, an empty queue. */
  readonly #waiters = {
    started: [] as PromiseWithResolvers<void>[],
    room: [] as Array<() => void>,
    drain: [] as Array<() => void>,
    queue: [] as Array<() => void>,
  };
  /** Every exit and close of a worker, awaited by close(). */
  readonly #exits = new Set<Promise<unknown>>();
  #slots: Slot<Api>[] = [];
  #pumpScheduled = false;
  #rotate = 0;
  /** Why the pool cannot go on: a crash loop, or workers that cannot be spawned at all. */
  #failure: Error | undefined;
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
      ...spawnOptions
    } = options;
    if (spawnOptions.thread) checkThreadOptions(worker, spawnOptions as SpawnWorkerOptions);
    else if (typeof worker === "string" || worker instanceof URL) moduleSpecifier(worker);
    this.size = integerOption("size", size, 1);
    this.#limits = {
      concurrency: integerOption("concurrency", concurrency, 1),
      maxQueued: integerOption("maxQueued", maxQueued, 0),
      maxAttempts: integerOption("maxAttempts", maxAttempts, 1),
      maxCallsPerWorker: numberOption("maxCallsPerWorker", maxCallsPerWorker, 1),
      idleTimeout: numberOption("idleTimeout", idleTimeout, 0),
      retryable: new Set(retryable),
    };
    this.#restarts = new RestartPolicy({
      restartDelay,
      maxRestartDelay,
      maxRestarts,
      restartWindow,
    });
    this.#spawn = () => spawnWorker<Api, Local>(worker, spawnOptions);
    this.remote = remoteProxy<Api>((method, param, callOptions) =>
      this.#call(method, param, callOptions)
    );
    for (let i = 0; i < this.size; i++) this.#start(new Slot());
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
      ...this.#counts,
      queued: this.#queue.waiting,
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
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closing) return Promise.reject(new PoolClosedError("The pool is closed"));
    if (this.#allReady()) return Promise.resolve();
    const waiter = Promise.withResolvers<void>();
    this.#waiters.started.push(waiter);
    return waiter.promise;
  }

  /**
   * Resolves when a call made now would not find the queue full: the way to apply
   * backpressure to a producer of calls.
   *
   * @returns A promise that resolves once there is room (at once if there is).
   */
  waitForRoom(): Promise<void> {
    if (this.#hasRoom()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.room.push(resolve));
  }

  /**
   * Resolves once no call is queued or in flight. The pool stays open.
   *
   * @returns A promise that resolves when the pool is idle.
   */
  drain(): Promise<void> {
    if (this.#idle()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.drain.push(resolve));
  }

  /**
   * Closes the pool: new calls fail with `PoolClosedError`, queued calls still run, and
   * every worker is closed once the queue is empty; closing a worker lets its calls in flight
   * finish (up to `drainTimeout`, see `WorkerHandle.close`). Never rejects.
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

  // ---------------------------------------------------------------- calls

  #call(method: string, param: unknown, options: CallOptions | undefined): PoolCall {
    const call = new PoolCall(method, param, options);
    const refusal = this.#failure ??
      (this.#closing ? new PoolClosedError(`The pool is closed: cannot call "${method}"`) : (
        this.#hasRoom() ? undefined : new PoolQueueFullError(this.#limits.maxQueued)
      ));
    if (refusal) {
      call.fail(refusal);
      this.#counts.failed++;
      return call;
    }
    const signal = options?.signal;
    if (signal?.aborted) {
      call.fail(signal.reason);
      this.#counts.failed++;
      return call;
    }
    if (signal) {
      const onAbort = () => this.#abortQueued(call);
      signal.addEventListener("abort", onAbort, { once: true });
      call.unlisten = () => signal.removeEventListener("abort", onAbort);
    }
    this.#queue.push(call);
    this.#schedulePump();
    return call;
  }

  #schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    queueMicrotask(() => {
      this.#pumpScheduled = false;
      this.#pump();
    });
  }

  /** Hands queued calls to free workers; starts workers the queue needs. */
  #pump(): void {
    for (let call = this.#queue.peek(); call !== undefined; call = this.#queue.peek()) {
      const slot = this.#leastLoaded();
      if (slot === undefined) break;
      this.#queue.take();
      this.#dispatch(call, slot);
    }
    this.#queue.compact();
    // Workers stopped for idleness come back when calls wait.
    if (this.#queue.waiting > 0 && !this.#failure) {
      while (this.#slots.length < this.size) this.#start(new Slot());
    }
    this.#wake();
  }

  #leastLoaded(): Slot<Api> | undefined {
    let best: Slot<Api> | undefined;
    // Start the scan at a rotating position so that ties spread over the workers.
    const slots = this.#slots;
    const n = slots.length;
    const offset = this.#rotate++ % Math.max(1, n);
    for (let i = 0; i < n; i++) {
      const slot = slots[(offset + i) % n];
      if (slot.state !== READY || slot.inFlight >= this.#limits.concurrency) continue;
      if (best === undefined || slot.inFlight < best.inFlight) best = slot;
      if (best.inFlight === 0) break;
    }
    return best;
  }

  #dispatch(call: PoolCall, slot: Slot<Api>): void {
    call.unlisten?.();
    call.unlisten = undefined;
    clearTimeout(slot.timer);
    slot.timer = undefined;
    const remaining = call.remainingTime();
    if (remaining <= 0) {
      this.#counts.failed++;
      call.fail(new DeadlineExceededError(call.method, call.options!.timeout!));
      return;
    }
    slot.inFlight++;
    this.#counts.inFlight++;
    call.attempts++;
    const options = remaining === Infinity ? call.options : { ...call.options, timeout: remaining };
    const remote = slot.handle!.remote as unknown as Record<
      string,
      (param: unknown, options?: CallOptions) => InnerCall
    >;
    const inner = remote[call.method](call.param, options);
    call.run(inner, (outcome, error) => this.#finished(call, slot, outcome, error));
  }

  /** A call left its worker: count it, retry it, or settle it, and reuse the worker. */
  #finished(call: PoolCall, slot: Slot<Api>, ok: boolean, error: unknown): boolean {
    slot.inFlight--;
    slot.calls++;
    this.#counts.inFlight--;
    let retry = false;
    if (ok) this.#counts.completed++;
    else {
      // The handle reports WorkerExitedError only once the process is gone: take the worker
      // out now, before the call is retried, rather than when its exit is processed. Every
      // call the crash took is retried, not only the first to report it (the worker is
      // GONE by the time the others do). A worker the pool stopped itself did not crash.
      const crashed = error instanceof WorkerExitedError && !slot.stopped;
      if (crashed && slot.state !== GONE) this.#crashed(slot, error);
      const { retryable, maxAttempts } = this.#limits;
      retry = crashed && !call.streaming && retryable.has(call.method) &&
        call.attempts < maxAttempts && !this.#failure && call.remainingTime() > 0;
      if (retry) {
        this.#counts.retried++;
        // Ahead of the queue: it was made before anything waiting there.
        this.#queue.pushFront(call);
      } else this.#counts.failed++;
    }
    if (slot.state === READY && slot.calls >= this.#limits.maxCallsPerWorker) {
      this.#retire(slot, true);
    }
    if (slot.state === RETIRING && slot.inFlight === 0) this.#stop(slot);
    if (slot.state === READY && slot.inFlight === 0) this.#armIdle(slot);
    this.#schedulePump();
    return retry;
  }

  #abortQueued(call: PoolCall): void {
    if (call.done || call.dispatched) return;
    this.#counts.failed++;
    this.#queue.cancelled();
    call.fail(call.options!.signal!.reason);
    this.#wake();
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
        if (this.#unref) handle.unref();
        this.#track(handle.exited.then((status) => this.#onExit(slot, handle, status)));
        this.#armIdle(slot);
        this.#schedulePump();
        if (this.#allReady()) {
          for (const waiter of this.#waiters.started.splice(0)) waiter.resolve();
        }
      },
      (error) => {
        if (slot.state === GONE) return;
        // A worker that started and failed is a crash; a spawn refused by this process
        // (no permission to run, no such program, bad options) would fail again each time.
        if (error instanceof ConnectionClosedError || error instanceof HandshakeError) {
          this.#crashed(slot, error);
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

  #crashed(slot: Slot<Api>, error: unknown): void {
    this.#counts.crashes++;
    clearTimeout(slot.timer);
    this.#remove(slot);
    // A retiring worker has its replacement already.
    const replace = slot.state !== RETIRING;
    slot.state = GONE;
    if (this.#failure || !replace) return;
    // While closing, a worker is only worth restarting for calls that still wait.
    if (this.#closing && this.#queue.waiting === 0) return;
    const decision = this.#restarts.crashed(performance.now());
    if (!decision.restart) {
      const { maxRestarts, restartWindow } = this.#restarts;
      this.#fail(
        new CrashLoopError(decision.crashes, maxRestarts, restartWindow, { cause: error }),
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
    }, decision.delay);
  }

  /** Stops new calls to `slot`; it closes once its calls finish. */
  #retire(slot: Slot<Api>, replace: boolean): void {
    slot.state = RETIRING;
    this.#counts.recycled++;
    if (replace && !this.#closing && !this.#failure) this.#start(new Slot());
  }

  /** Closes a worker the pool no longer needs. */
  #stop(slot: Slot<Api>): void {
    slot.stopped = true;
    clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.state = GONE;
    this.#remove(slot);
    if (slot.handle) this.#track(slot.handle.close());
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
    }, idleTimeout);
    if (this.#unref) Deno.unrefTimer(slot.timer);
  }

  #track(promise: Promise<unknown>): void {
    const tracked = promise.catch(() => {}).finally(() => this.#exits.delete(tracked));
    this.#exits.add(tracked);
  }

  // ---------------------------------------------------------------- ending

  /** The pool cannot go on: fail everything waiting, stop every worker. */
  #fail(error: Error): void {
    this.#failure = error;
    for (const call of this.#queue.clear()) {
      this.#counts.failed++;
      call.fail(error);
    }
    for (const waiter of this.#waiters.started.splice(0)) waiter.reject(error);
    for (const slot of [...this.#slots]) this.#stop(slot);
    this.#wake();
  }

  async #close(): Promise<void> {
    for (const waiter of this.#waiters.started.splice(0)) {
      waiter.reject(new PoolClosedError("The pool was closed before its workers started"));
    }
    // Queued calls still run; calls in flight then drain as each worker closes (bounded by
    // its drainTimeout and exit timeouts, unlike waiting here for every call to end).
    while (this.#queue.waiting > 0) {
      await new Promise<void>((resolve) => this.#waiters.queue.push(resolve));
    }
    for (const slot of [...this.#slots]) this.#stop(slot);
    while (this.#exits.size > 0) await Promise.all([...this.#exits]);
  }

  #allReady(): boolean {
    let ready = 0;
    for (const slot of this.#slots) if (slot.state === READY) ready++;
    return ready >= this.size;
  }

  #hasRoom(): boolean {
    const { concurrency, maxQueued } = this.#limits;
    let free = 0;
    for (const slot of this.#slots) {
      if (slot.state === READY) free += concurrency - slot.inFlight;
      else if (slot.state === STARTING || slot.state === WAITING) free += concurrency;
    }
    return this.#queue.waiting < maxQueued + Math.max(0, free);
  }

  #idle(): boolean {
    return this.#counts.inFlight === 0 && this.#queue.waiting === 0;
  }

  #wake(): void {
    const waiters = this.#waiters;
    if (waiters.room.length > 0 && this.#hasRoom()) {
      for (const wake of waiters.room.splice(0)) wake();
    }
    if (waiters.drain.length > 0 && this.#idle()) {
      for (const wake of waiters.drain.splice(0)) wake();
    }
    if (waiters.queue.length > 0 && this.#queue.waiting === 0) {
      for (const wake of waiters.queue.splice(0)) wake();
    }
  }
}

/** The pool's limits, checked once. */
interface PoolLimits {
  concurrency: number;
  maxQueued: number;
  maxAttempts: number;
  maxCallsPerWorker: number;
  idleTimeout: number;
  retryable: ReadonlySet<string>;
}
