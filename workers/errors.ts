/**
 * The errors the workers layer raises: a worker process that went away
 * ({@linkcode WorkerExitedError}), one that wrote text on its channel
 * ({@linkcode WorkerStdoutError}), a thread worker asked for permissions Deno cannot give
 * it ({@linkcode ThreadPermissionsError}), a pool whose workers keep crashing
 * ({@linkcode CrashLoopError}), a pool that is closed ({@linkcode PoolClosedError}) or whose
 * queue is full ({@linkcode PoolQueueFullError}), a retryable call a pool could not send again
 * ({@linkcode CallNotReplayableError}).
 *
 * @example
 * ```ts
 * import { WorkerExitedError } from "@conduit/ipc/workers";
 * import { ConnectionClosedError } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * const err = new WorkerExitedError({ worker: "prime_worker.ts", pid: 42, code: 1, signal: null });
 * assert.ok(err instanceof ConnectionClosedError);
 * assert.equal(err.message, "Worker prime_worker.ts (pid 42) exited with code 1");
 * ```
 *
 * @module
 */

import { ConnectionClosedError } from "../channel/errors.ts";
import { ConduitError, FramingError } from "../errors.ts";

export { ConduitError, ConnectionClosedError, FramingError };

/** What {@linkcode WorkerExitedError} reports about the process that went away. */
export interface WorkerExitInfo {
  /** The worker's name: its module's file name, or the command. */
  worker: string;
  /** The worker's process id (for a thread worker, its process's). */
  pid: number;
  /**
   * Whether the worker was a thread (`spawnWorker(…, { thread: true })`): the message then
   * says "(thread)" instead of the pid, and "was terminated" instead of a signal.
   *
   * @default {false}
   */
  thread?: boolean;
  /** The exit code (128 + the signal number when a signal ended it). */
  code: number;
  /** The signal that ended the worker, or `null` when it exited by itself. */
  signal: Deno.Signal | null;
  /**
   * The worker's last stderr lines, oldest first.
   *
   * @default {[]}
   */
  stderrTail?: readonly string[];
  /**
   * The stderr lines the message quotes, when the worker wrote more than its tail: the first
   * lines and the error lines (Deno's `error: …`) before the tail, then the tail, with a line
   * `… (N lines left out)` at each gap. A failure to load a module is explained on the first
   * line and followed by a list longer than the tail.
   *
   * @default {stderrTail}
   */
  stderrLines?: readonly string[];
  /**
   * Why the worker was stopped, when this side stopped it (e.g. a heartbeat timeout), or
   * what would have kept it alive (e.g. the permission it lacked).
   *
   * @default {undefined}
   */
  reason?: string;
  /**
   * Whether the stderr lines were already shown on the console (`spawnWorker`'s
   * `stderr: "prefix"`): the message then points to them instead of repeating them.
   *
   * @default {false}
   */
  stderrShown?: boolean;
  /**
   * Whether it exited before it served (before the handshake): with code 0 that is a module
   * that never called `serveWorker()`.
   *
   * @default {false}
   */
  beforeServing?: boolean;
}

/**
 * The worker exited, crashed or was killed while a call was pending, or a call was
 * made after it exited. A subclass of `ConnectionClosedError`, since the connection went with
 * the process; `cause` is the channel's own error. The message carries the exit code or
 * signal and the last stderr lines, so a crash explains itself.
 *
 * A thread worker (`spawnWorker(…, { thread: true })`) reads the same: code 1 when it died
 * of an uncaught error (at load, or outside a handler; the error is the `reason` in the
 * message), code 0 when it closed itself (`self.close()`), and `signal: "SIGKILL"`
 * (code 137) when `kill()` terminated it. Its `stderrTail` is empty: a thread writes to its
 * process's own stderr.
 *
 * @example
 * ```ts
 * import { WorkerExitedError } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * const err = new WorkerExitedError({
 *   worker: "hash_worker.ts",
 *   pid: 7,
 *   code: 137,
 *   signal: "SIGKILL",
 *   stderrTail: ["working on block 3"],
 * });
 * assert.equal(err.signal, "SIGKILL");
 * assert.deepEqual(err.stderrTail, ["working on block 3"]);
 * assert.match(err.message, /killed by SIGKILL; last stderr lines:\n {2}working on block 3/);
 *
 * // More output than the tail: the line that explains it is kept.
 * const load = new WorkerExitedError({
 *   worker: "w.ts",
 *   pid: 8,
 *   code: 1,
 *   signal: null,
 *   stderrTail: [" * ./workers/nats"],
 *   stderrLines: ["error: Unknown export './workers/serv'", "… (24 lines left out)", " * ./workers/nats"],
 * });
 * assert.equal(load.stderrLines[0], "error: Unknown export './workers/serv'");
 * assert.match(load.message, /exited with code 1; stderr \(its first, error and last lines\):\n {2}error: Unknown export/);
 * ```
 */
export class WorkerExitedError extends ConnectionClosedError {
  /** The worker's name: its module's file name, or the command. */
  readonly worker: string;
  /** The worker's process id (for a thread worker, its process's). */
  readonly pid: number;
  /** Whether the worker was a thread (see {@linkcode WorkerExitInfo.thread}). */
  readonly thread: boolean;
  /** The exit code (128 + the signal number when a signal ended it). */
  readonly code: number;
  /** The signal that ended the worker, or `null` when it exited by itself. */
  readonly signal: Deno.Signal | null;
  /** The worker's last stderr lines, oldest first. */
  readonly stderrTail: readonly string[];
  /** The stderr lines the message quotes (see {@linkcode WorkerExitInfo.stderrLines}). */
  readonly stderrLines: readonly string[];
  /** Whether it exited before it served (see {@linkcode WorkerExitInfo.beforeServing}). */
  readonly beforeServing: boolean;

  /**
   * Creates the error; the message names the worker, its pid, how it ended and its last
   * stderr lines.
   *
   * @param info The worker and how it ended.
   * @param options Standard error options (`cause`: the channel's error).
   */
  constructor(info: WorkerExitInfo, options?: ErrorOptions) {
    const before = info.beforeServing
      ? info.code === 0 && info.signal === null
        ? " before it served: did the module call serveWorker()?"
        : " before it served"
      : "";
    const how = info.signal !== null
      ? `was ${info.thread ? "terminated" : `killed by ${info.signal}`}${before}`
      : `exited with code ${info.code}${before}`;
    const reason = info.reason ? ` (${info.reason})` : "";
    const tail = info.stderrTail ?? [];
    const quoted = info.stderrLines ?? tail;
    const heading = quoted.length > tail.length
      ? "stderr (its first, error and last lines)"
      : "last stderr lines";
    const lines = quoted.length === 0
      ? ""
      : info.stderrShown
      ? "; its stderr is printed above"
      : `; ${heading}:\n${quoted.map((line) => `  ${line}`).join("\n")}`;
    const where = info.thread ? "thread" : `pid ${info.pid}`;
    super(`Worker ${info.worker} (${where}) ${how}${reason}${lines}`, options);
    this.worker = info.worker;
    this.pid = info.pid;
    this.thread = info.thread ?? false;
    this.code = info.code;
    this.signal = info.signal;
    this.stderrTail = tail;
    this.stderrLines = quoted;
    this.beforeServing = info.beforeServing ?? false;
  }
}

/**
 * A pool's workers crashed more often than its restart policy allows
 * (`maxRestarts` within `restartWindowMs`): the pool stops restarting them and fails its
 * calls with this error instead of spinning. `cause` is the last crash.
 *
 * @example
 * ```ts
 * import { CrashLoopError } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * const err = new CrashLoopError(6, 5, 10_000);
 * assert.equal(err.crashes, 6);
 * assert.equal(
 *   err.message,
 *   "Workers crashed 6 times within 10000 ms, more than maxRestarts (5): not restarting",
 * );
 * ```
 */
export class CrashLoopError extends ConduitError {
  /** How many crashes happened within the window. */
  readonly crashes: number;
  /** The restart limit in force. */
  readonly maxRestarts: number;
  /**
   * The window the crashes were counted in, in milliseconds: the pool's `restartWindow`, or,
   * when more than `maxRestarts` starts failed in a row, the time they took.
   */
  readonly restartWindow: number;

  /**
   * Creates the error; the message names the crash count, the limit and the window.
   *
   * @param crashes Crashes counted within the window.
   * @param maxRestarts The restart limit.
   * @param restartWindow The window, in milliseconds.
   * @param options Standard error options (`cause`: the last crash).
   */
  constructor(
    crashes: number,
    maxRestarts: number,
    restartWindow: number,
    options?: ErrorOptions,
  ) {
    super(
      `Workers crashed ${crashes} times within ${restartWindow} ms, more than maxRestarts ` +
        `(${maxRestarts}): not restarting`,
      options,
    );
    this.crashes = crashes;
    this.maxRestarts = maxRestarts;
    this.restartWindow = restartWindow;
  }
}

/**
 * A call was made on a pool that is closing or closed.
 *
 * @example
 * ```ts
 * import { PoolClosedError } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * assert.equal(new PoolClosedError("The pool is closed").name, "PoolClosedError");
 * ```
 */
export class PoolClosedError extends ConduitError {}

/**
 * A call found the pool's queue full: `maxQueued` calls were already waiting for a worker.
 * Wait for `pool.waitForRoom()` before calling again, or raise the limit.
 *
 * @example
 * ```ts
 * import { PoolQueueFullError } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * const err = new PoolQueueFullError(1000);
 * assert.equal(err.limit, 1000);
 * assert.equal(err.message, "The pool's queue is full: 1000 calls wait, maxQueued is 1000");
 * ```
 */
export class PoolQueueFullError extends ConduitError {
  /** The queue's limit. */
  readonly limit: number;

  /**
   * Creates the error; the message names the limit.
   *
   * @param limit The pool's `maxQueued`.
   */
  constructor(limit: number) {
    super(`The pool's queue is full: ${limit} calls wait, maxQueued is ${limit}`);
    this.limit = limit;
  }
}

/**
 * A call of a retryable method lost its worker (or its NATS connection) and was not run again
 * because its input cannot be sent again: its stream param was an iterator or a stream, which
 * the first attempt consumed (a retry would send what was left of it, and the answer to part
 * of the input would come back as a success). To make such a call retryable, pass a function
 * that returns a fresh iterable (an array, a `Uint8Array`, an async iterable) each time it is
 * called. `cause` is the error of the attempt that was lost.
 *
 * A subclass of `ConnectionClosedError`: code that handles a lost connection handles it too.
 *
 * @example
 * ```ts
 * import { CallNotReplayableError, WorkerExitedError } from "@conduit/ipc/workers";
 * import { ConnectionClosedError } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * const lost = new WorkerExitedError({ worker: "hash.ts", pid: 42, code: 137, signal: "SIGKILL" });
 * const err = new CallNotReplayableError("upload", { cause: lost });
 * assert.ok(err instanceof ConnectionClosedError);
 * assert.equal(err.method, "upload");
 * assert.equal(err.cause, lost);
 * ```
 */
export class CallNotReplayableError extends ConnectionClosedError {
  /** The method of the call. */
  readonly method: string;

  /**
   * Creates the error; the message names the method and the fix.
   *
   * @param method The method of the call that was not retried.
   * @param options `cause`: the error of the lost attempt.
   */
  constructor(method: string, options?: ErrorOptions) {
    const why = options?.cause instanceof Error ? `: ${options.cause.message}` : "";
    super(
      `"${method}" was not retried: its stream param was consumed by the attempt that was ` +
        `lost${why}; pass a function that returns a fresh iterable to make it retryable`,
      options,
    );
    this.method = method;
  }
}

/**
 * A worker wrote text to its stdout, which carries its channel to the parent: the bytes
 * arrived where a frame's header was expected. The message quotes the start of the text.
 * `console.log` and `Deno.stdout` are moved to stderr for a worker module, so this comes from
 * `node:process`'s `process.stdout`, a subprocess that inherits stdout, or a
 * `WorkerCommand` that prints; use `console.error`, or `transport: "unix"`, which leaves
 * stdout free. A {@linkcode WorkerExitedError} carries it as its `cause`.
 *
 * @example
 * ```ts
 * import { WorkerStdoutError } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * const err = new WorkerStdoutError("hello\n");
 * assert.equal(err.text, "hello\n");
 * assert.match(err.message, /wrote text to its stdout.*"hello\\n"/);
 * ```
 */
export class WorkerStdoutError extends FramingError {
  /** The start of the text, as it arrived (at most 60 bytes, decoded as UTF-8). */
  readonly text: string;

  /**
   * Creates the error; the message quotes `text` and says what to do instead.
   *
   * @param text The start of what the worker wrote.
   * @param options Standard error options (`cause`: the framing error it caused).
   */
  constructor(text: string, options?: ErrorOptions) {
    super(
      `The worker wrote text to its stdout, which carries its channel: ${JSON.stringify(text)}. ` +
        "Print with console.log or console.error (conduit sends both to stderr), not " +
        'process.stdout or a subprocess that inherits stdout; or use transport: "unix"',
      options,
    );
    this.text = text;
  }
}

/**
 * `spawnWorker(…, { thread: true, permissions })` was asked for least privilege, which Deno
 * grants a Web Worker only when its `worker-options` feature is on (`deno run
 * --unstable-worker-options`, or `"unstable": ["worker-options"]` in deno.json); without it
 * Deno would end the whole process (exit code 70) as the Worker is made, so conduit refuses
 * first. Enable the feature, or leave `permissions` out (the thread then has this process's
 * permissions), or run the worker as a process. conduit sees the feature by itself only when
 * this process has every permission (`-A`, on Linux); otherwise pass
 * `unstableWorkerOptions: true` to say that it is on.
 *
 * @example
 * ```ts
 * import { ThreadPermissionsError } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * const err = new ThreadPermissionsError("hash_worker.ts");
 * assert.equal(err.flag, "--unstable-worker-options");
 * assert.match(err.message, /--unstable-worker-options/);
 * ```
 */
export class ThreadPermissionsError extends ConduitError {
  /** The Deno flag that enables per-worker permissions. */
  readonly flag: string = "--unstable-worker-options";

  /**
   * Creates the error; the message names the worker, the flag and the alternatives.
   *
   * @param worker The worker's name.
   * @param options Standard error options.
   */
  constructor(worker: string, options?: ErrorOptions) {
    super(
      `Thread worker ${worker}: permissions for a thread need Deno's worker-options feature, ` +
        "which is not known to be on (and without it Deno would exit this process): run deno " +
        'with --unstable-worker-options or "unstable": ["worker-options"] in deno.json, and ' +
        "pass unstableWorkerOptions: true unless the process runs with -A (conduit cannot " +
        "see the flag otherwise); or leave permissions out (the thread then has this " +
        "process's permissions); or drop thread: true (a process gets permission flags)",
      options,
    );
  }
}
