/**
 * A pool of worker processes behind one typed `remote`: {@linkcode WorkerPool}.
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
 * import type { EchoApi } from "../workers/_testdata/echo_worker.ts";
 *
 * await using pool = new WorkerPool<EchoApi>(
 *   new URL("../workers/_testdata/echo_worker.ts", import.meta.url),
 *   { size: 2 },
 * );
 * const results = await Promise.all([1, 2, 3, 4].map((n) => pool.remote.echo(n)));
 * assert.deepEqual(results, [1, 2, 3, 4]);
 * assert.equal(pool.stats.completed, 4);
 * ```
 *
 * @module
 */

import { ConnectionClosedError, DeadlineExceededError, HandshakeError } from "../channel/errors.ts";
import type { CallOptions, MethodName, RemoteOf, RemoteStream } from "../channel/types.ts";
import { ConduitError } from "../errors.ts";
import {
  CrashLoopError,
  PoolClosedError,
  PoolQueueFullError,
  WorkerExitedError,
} from "./errors.ts";
import {
  spawnWorker,
  type SpawnWorkerOptions,
  type WorkerCommand,
  type WorkerHandle,
} from "./spawn_worker.ts";

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
   * Stream calls are never retried.
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
}

/**
 * A pool of worker processes that serve the same module, called through one typed `remote`.
 *
 * The workers start at once. Each call goes to the ready worker with the fewest calls in
 * flight (up to `concurrency` each); when all are busy it waits in a queue of at most
 * `maxQueued` calls. A stream call holds its worker until the stream ends.
 *
 * A call is dispatched in a microtask after it is made, or when it leaves the queue; a call
 * you start iterating by then is a stream call, any other is awaited as a value. So iterate
 * a stream in the same tick you make the call: `for await (const x of pool.remote.items())`.
 *
 * A call's `timeout` counts from the moment it is made, queueing included; its `signal`
 * removes it from the queue.
 *
 * @typeParam Api The handler interface the workers serve.
 * @typeParam Local The handler object this side serves to each worker (call-backs).
 *
 * @example A crash is survived; a retryable call runs again on the new worker
 * ```ts
 * import { WorkerPool } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 * import type { EchoApi } from "../workers/_testdata/echo_worker.ts";
 *
 * const pool = new WorkerPool<EchoApi>(
 *   new URL("../workers/_testdata/echo_worker.ts", import.meta.url),
 *   { size: 1, stderr: "discard", retryable: ["echo"] },
 * );
 * await assert.rejects(pool.remote.exit(1), { name: "WorkerExitedError" });
 * assert.equal(await pool.remote.echo("back"), "back");
 * assert.equal(pool.stats.crashes, 1);
 * assert.equal(pool.stats.restarts, 1);
 * await pool.close();
 * ```
 */
export class WorkerPool<Api extends object, Local extends object = object>
  implements AsyncDisposable {
  /** The workers' methods; see the class description for how calls are dispatched. */
  readonly remote: RemoteOf<Api>;
  /** How many workers the pool runs. */
  readonly size: number;
  readonly #worker: string | URL | WorkerCommand;
  readonly #spawnOptions: SpawnWorkerOptions<Local>;
  readonly #concurrency: number;
  readonly #maxQueued: number;
  readonly #retryable: ReadonlySet<string>;
  readonly #maxAttempts: number;
  readonly #restartDelay: number;
  readonly #maxRestartDelay: number;
  readonly #maxRestarts: number;
  readonly #restartWindow: number;
  readonly #maxCallsPerWorker: number;
  readonly #idleTimeout: number;
  #slots: Slot<Api>[] = [];
  #queue: PoolCall[] = [];
  #queueHead = 0;
  /** Calls in the queue that are still waiting (aborted ones stay until skipped). */
  #waiting = 0;
  #pumpScheduled = false;
  #rotate = 0;
  #crashTimes: number[] = [];
  /** Why the pool cannot go on: a crash loop, or workers that cannot be spawned at all. */
  #failure: Error | undefined;
  #closing: Promise<void> | undefined;
  #readyWaiters: PromiseWithResolvers<void>[] = [];
  #drainWaiters: Array<() => void> = [];
  #queueWaiters: Array<() => void> = [];
  #roomWaiters: Array<() => void> = [];
  /** Every exit and close of a worker, awaited by close(). */
  #exits = new Set<Promise<unknown>>();
  #inFlight = 0;
  #completed = 0;
  #failed = 0;
  #retried = 0;
  #crashes = 0;
  #restarts = 0;
  #recycled = 0;

  /**
   * Creates the pool and starts its workers.
   *
   * @param worker The worker module (path or URL), or a command; as for `spawnWorker`.
   * @param options Pool size, concurrency, queue, restart and recycling policy, and the
   * options each worker is spawned with; see {@linkcode WorkerPoolOptions}.
   * @throws {RangeError} When a size, limit or delay is out of range.
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
    this.size = integer("size", size, 1);
    this.#concurrency = integer("concurrency", concurrency, 1);
    this.#maxQueued = integer("maxQueued", maxQueued, 0);
    this.#maxAttempts = integer("maxAttempts", maxAttempts, 1);
    this.#maxRestarts = integer("maxRestarts", maxRestarts, 0);
    this.#restartDelay = atLeast("restartDelay", restartDelay, 0);
    this.#maxRestartDelay = atLeast("maxRestartDelay", maxRestartDelay, 0);
    this.#restartWindow = atLeast("restartWindow", restartWindow, 0);
    this.#maxCallsPerWorker = atLeast("maxCallsPerWorker", maxCallsPerWorker, 1);
    this.#idleTimeout = atLeast("idleTimeout", idleTimeout, 0);
    this.#retryable = new Set(retryable);
    this.#worker = worker;
    this.#spawnOptions = spawnOptions;
    const methods: Record<string, unknown> = Object.create(null);
    this.remote = new Proxy(methods, {
      get: (target, key) => {
        if (typeof key !== "string" || key === "then") return undefined;
        return target[key] ??= (param: unknown, callOptions?: CallOptions) =>
          this.#call(key, param, callOptions);
      },
    }) as RemoteOf<Api>;
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
      inFlight: this.#inFlight,
      queued: this.#waiting,
      completed: this.#completed,
      failed: this.#failed,
      retried: this.#retried,
      crashes: this.#crashes,
      restarts: this.#restarts,
      recycled: this.#recycled,
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
  ready(): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closing) return Promise.reject(new PoolClosedError("The pool is closed"));
    if (this.#allReady()) return Promise.resolve();
    const waiter = Promise.withResolvers<void>();
    this.#readyWaiters.push(waiter);
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
    return new Promise((resolve) => this.#roomWaiters.push(resolve));
  }

  /**
   * Resolves once no call is queued or in flight. The pool stays open.
   *
   * @returns A promise that resolves when the pool is idle.
   */
  drain(): Promise<void> {
    if (this.#idle()) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
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

  /** Closes the pool (`await using pool = …`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  // ---------------------------------------------------------------- calls

  #call(method: string, param: unknown, options: CallOptions | undefined): PoolCall {
    const call = new PoolCall(method, param, options);
    const refusal = this.#failure ??
      (this.#closing ? new PoolClosedError(`The pool is closed: cannot call "${method}"`) : (
        this.#hasRoom() ? undefined : new PoolQueueFullError(this.#maxQueued)
      ));
    if (refusal) {
      call.fail(refusal);
      this.#failed++;
      return call;
    }
    const signal = options?.signal;
    if (signal?.aborted) {
      call.fail(signal.reason);
      this.#failed++;
      return call;
    }
    if (signal) {
      const onAbort = () => this.#abortQueued(call);
      signal.addEventListener("abort", onAbort, { once: true });
      call.unlisten = () => signal.removeEventListener("abort", onAbort);
    }
    this.#queue.push(call);
    this.#waiting++;
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
    while (this.#queueHead < this.#queue.length) {
      const call = this.#queue[this.#queueHead];
      if (call.done) {
        this.#queueHead++;
        continue;
      }
      const slot = this.#leastLoaded();
      if (slot === undefined) break;
      this.#queueHead++;
      this.#waiting--;
      this.#dispatch(call, slot);
    }
    if (this.#queueHead === this.#queue.length) {
      this.#queue = [];
      this.#queueHead = 0;
    } else if (this.#queueHead > 1024 && this.#queueHead * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#queueHead);
      this.#queueHead = 0;
    }
    // Workers stopped for idleness come back when calls wait.
    if (this.#waiting > 0 && !this.#failure) {
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
      if (slot.state !== READY || slot.inFlight >= this.#concurrency) continue;
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
      this.#failed++;
      call.fail(new DeadlineExceededError(call.method, call.options!.timeout!));
      return;
    }
    slot.inFlight++;
    this.#inFlight++;
    call.attempts++;
    const options = remaining === Infinity ? call.options : { ...call.options, timeout: remaining };
    const remote = slot.handle!.remote as unknown as Record<
      string,
      (param: unknown, options?: CallOptions) => PromiseLike<unknown> & RemoteStream<unknown>
    >;
    const inner = remote[call.method](call.param, options);
    call.run(inner, (outcome, error) => this.#finished(call, slot, outcome, error));
  }

  /** A call left its worker: count it, retry it, or settle it, and reuse the worker. */
  #finished(call: PoolCall, slot: Slot<Api>, ok: boolean, error: unknown): boolean {
    slot.inFlight--;
    slot.calls++;
    this.#inFlight--;
    let retry = false;
    if (ok) this.#completed++;
    else {
      // The handle reports WorkerExitedError only once the process is gone: take the worker
      // out now, before the call is retried, rather than when its exit is processed. (A
      // worker the pool stopped itself is GONE already: that is no crash.)
      const crashed = error instanceof WorkerExitedError && slot.state !== GONE;
      if (crashed) this.#crashed(slot, error);
      retry = crashed && !call.streaming && this.#retryable.has(call.method) &&
        call.attempts < this.#maxAttempts && !this.#failure && call.remainingTime() > 0;
      if (retry) {
        this.#retried++;
        // Ahead of the queue: it was made before anything waiting there.
        this.#queue.splice(this.#queueHead, 0, call);
        this.#waiting++;
      } else this.#failed++;
    }
    if (slot.state === READY && slot.calls >= this.#maxCallsPerWorker) this.#retire(slot, true);
    if (slot.state === RETIRING && slot.inFlight === 0) this.#stop(slot);
    if (slot.state === READY && slot.inFlight === 0) this.#armIdle(slot);
    this.#schedulePump();
    return retry;
  }

  #abortQueued(call: PoolCall): void {
    if (call.done || call.dispatched) return;
    this.#failed++;
    this.#waiting--;
    call.fail(call.options!.signal!.reason);
    this.#wake();
  }

  // ---------------------------------------------------------------- workers

  #start(slot: Slot<Api>): void {
    slot.state = STARTING;
    if (!this.#slots.includes(slot)) this.#slots.push(slot);
    const started = spawnWorker<Api, Local>(this.#worker, this.#spawnOptions).then(
      (handle) => {
        slot.handle = handle;
        if (slot.state === GONE) {
          // The pool closed or failed while the worker started.
          this.#track(handle.close());
          return;
        }
        slot.state = READY;
        this.#track(handle.exited.then((status) => this.#onExit(slot, handle, status)));
        this.#armIdle(slot);
        this.#schedulePump();
        if (this.#allReady()) {
          for (const waiter of this.#readyWaiters.splice(0)) waiter.resolve();
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
        code: status.code,
        signal: status.signal,
        stderrTail: handle.stderrTail,
      }),
    );
  }

  #crashed(slot: Slot<Api>, error: unknown): void {
    this.#crashes++;
    clearTimeout(slot.timer);
    this.#remove(slot);
    // A retiring worker has its replacement already.
    const replace = slot.state !== RETIRING;
    slot.state = GONE;
    if (this.#failure || !replace) return;
    // While closing, a worker is only worth restarting for calls that still wait.
    if (this.#closing && this.#waiting === 0) return;
    const now = performance.now();
    this.#crashTimes = this.#crashTimes.filter((t) => now - t < this.#restartWindow);
    this.#crashTimes.push(now);
    const crashes = this.#crashTimes.length;
    if (crashes > this.#maxRestarts) {
      this.#fail(
        new CrashLoopError(crashes, this.#maxRestarts, this.#restartWindow, { cause: error }),
      );
      return;
    }
    const replacement = new Slot<Api>();
    replacement.state = WAITING;
    this.#slots.push(replacement);
    const delay = Math.min(this.#restartDelay * 2 ** (crashes - 1), this.#maxRestartDelay);
    replacement.timer = setTimeout(() => {
      replacement.timer = undefined;
      this.#restarts++;
      this.#start(replacement);
    }, delay);
  }

  /** Stops new calls to `slot`; it closes once its calls finish. */
  #retire(slot: Slot<Api>, replace: boolean): void {
    slot.state = RETIRING;
    this.#recycled++;
    if (replace && !this.#closing && !this.#failure) this.#start(new Slot());
  }

  /** Closes a worker the pool no longer needs. */
  #stop(slot: Slot<Api>): void {
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
    if (this.#idleTimeout === Infinity || this.#closing) return;
    clearTimeout(slot.timer);
    slot.timer = setTimeout(() => {
      slot.timer = undefined;
      if (slot.state !== READY || slot.inFlight > 0) return;
      this.#recycled++;
      this.#stop(slot);
    }, this.#idleTimeout);
  }

  #track(promise: Promise<unknown>): void {
    const tracked = promise.catch(() => {}).finally(() => this.#exits.delete(tracked));
    this.#exits.add(tracked);
  }

  // ---------------------------------------------------------------- ending

  /** The pool cannot go on: fail everything waiting, stop every worker. */
  #fail(error: Error): void {
    this.#failure = error;
    for (let i = this.#queueHead; i < this.#queue.length; i++) {
      const call = this.#queue[i];
      if (call.done) continue;
      this.#failed++;
      call.fail(error);
    }
    this.#queue = [];
    this.#queueHead = 0;
    this.#waiting = 0;
    for (const waiter of this.#readyWaiters.splice(0)) waiter.reject(error);
    for (const slot of [...this.#slots]) this.#stop(slot);
    this.#wake();
  }

  async #close(): Promise<void> {
    for (const waiter of this.#readyWaiters.splice(0)) {
      waiter.reject(new PoolClosedError("The pool was closed before its workers started"));
    }
    // Queued calls still run; calls in flight then drain as each worker closes (bounded by
    // its drainTimeout and exit timeouts, unlike waiting here for every call to end).
    while (this.#waiting > 0) {
      await new Promise<void>((resolve) => this.#queueWaiters.push(resolve));
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
    let free = 0;
    for (const slot of this.#slots) {
      if (slot.state === READY) free += this.#concurrency - slot.inFlight;
      else if (slot.state === STARTING || slot.state === WAITING) free += this.#concurrency;
    }
    return this.#waiting < this.#maxQueued + Math.max(0, free);
  }

  #idle(): boolean {
    return this.#inFlight === 0 && this.#waiting === 0;
  }

  #wake(): void {
    if (this.#roomWaiters.length > 0 && this.#hasRoom()) {
      for (const wake of this.#roomWaiters.splice(0)) wake();
    }
    if (this.#drainWaiters.length > 0 && this.#idle()) {
      for (const wake of this.#drainWaiters.splice(0)) wake();
    }
    if (this.#queueWaiters.length > 0 && this.#waiting === 0) {
      for (const wake of this.#queueWaiters.splice(0)) wake();
    }
  }
}

const FACE_NONE = 0;
const FACE_PROMISE = 1;
const FACE_STREAM = 2;

type Done = (ok: boolean, error: unknown) => boolean;

/**
 * A call made through the pool: awaitable and async-iterable like a channel call. Its face
 * is fixed when it is dispatched (see WorkerPool's description).
 */
class PoolCall implements Promise<unknown>, RemoteStream<unknown> {
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
  #readable: ReadableStream<unknown> | undefined;

  constructor(method: string, param: unknown, options: CallOptions | undefined) {
    this.method = method;
    this.param = param;
    this.options = options;
    const timeout = options?.timeout;
    this.#deadline = timeout === undefined || timeout === Infinity
      ? Infinity
      : performance.now() + timeout;
  }

  get [Symbol.toStringTag](): string {
    return "PoolCall";
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

  catch<R = never>(
    onrejected?: ((reason: unknown) => R | PromiseLike<R>) | null,
  ): Promise<unknown> {
    return this.then(undefined, onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<unknown> {
    return this.then().finally(onfinally);
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

  get readable(): ReadableStream<unknown> {
    return this.#readable ??= ReadableStream.from(this);
  }

  async cancel(reason?: unknown): Promise<void> {
    if (this.#readable) return await this.#readable.cancel(reason);
    if (!this.dispatched) {
      this.fail(reason ?? new ConduitError(`The call to "${this.method}" was cancelled`));
    }
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

function integer(name: string, value: number, min: number): number {
  if (!Number.isInteger(value) || value < min) {
    throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
  }
  return value;
}

function atLeast(name: string, value: number, min: number): number {
  if (!(value >= min)) throw new RangeError(`${name} must be a number >= ${min}, got ${value}`);
  return value;
}
