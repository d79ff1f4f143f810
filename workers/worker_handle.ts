/**
 * A running worker, as {@linkcode spawnWorker} returns it: {@linkcode WorkerHandle}.
 *
 * @module
 */

import type { MethodName, RemoteArgs, RemoteOf } from "../channel/types.ts";

/**
 * A running worker: its typed `remote`, and its process. Get one from
 * {@linkcode spawnWorker}; dispose of it with `await using`, `close()` or `kill()`.
 *
 * @typeParam Api The handler interface the worker serves.
 *
 * @example Killing a worker fails its pending calls
 * ```ts
 * import { spawnWorker, WorkerExitedError } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 * import type { EchoApi } from "../examples/_echo_worker.ts";
 *
 * const url = new URL("../examples/_echo_worker.ts", import.meta.url);
 * const worker = await spawnWorker<EchoApi>(url);
 * const pending = worker.remote.sleep(60_000);
 * await worker.kill();
 * const err = await pending.then(() => null, (e) => e);
 * assert.ok(err instanceof WorkerExitedError);
 * assert.equal(err.signal, "SIGKILL");
 * ```
 */
export interface WorkerHandle<Api extends object> extends AsyncDisposable {
  /**
   * The worker's methods. A call fails with {@linkcode WorkerExitedError} when the worker
   * exits before it finishes, and with the channel's errors (`RemoteError`,
   * `DeadlineExceededError`, …) otherwise.
   */
  readonly remote: RemoteOf<Api>;
  /** The worker's process id; for a thread worker, this process's own. */
  readonly pid: number;
  /** Whether the worker is a thread (`spawnWorker(…, { thread: true })`), not a process. */
  readonly thread: boolean;
  /** The worker's name, as in messages. */
  readonly name: string;
  /**
   * Resolves once the worker has exited and every pipe and the connection are released, with
   * its exit status (`code`, and the `signal` that ended it, if any).
   */
  readonly exited: Promise<Deno.CommandStatus>;
  /** The worker's last stderr lines, oldest first (none for a thread worker). */
  readonly stderrTail: readonly string[];
  /**
   * Sends a notification: runs the worker's handler of that name, with no answer.
   *
   * @param method The worker's method.
   * @param param Its param.
   * @throws {ConnectionClosedError} When the connection is closing or closed.
   */
  notify<K extends MethodName<Api>>(method: K, param: RemoteArgs<Api[K]>[0]): void;
  /**
   * Stops the worker gracefully: GOODBYE, drain, wait for exit, then `SIGTERM`, then
   * `SIGKILL` (see the timeouts in {@linkcode SpawnWorkerOptions}). A thread worker is
   * terminated as soon as its channel has closed; one whose calls outlived `drainTimeout`
   * then reads as killed (`SIGKILL`, code 137). The calls that outlived it fail with a
   * {@linkcode WorkerExitedError} that names `drainTimeout`, for a process too. Never rejects.
   *
   * @returns The exit status, once everything is released.
   */
  close(): Promise<Deno.CommandStatus>;
  /**
   * Sends the worker a signal at once; pending calls fail with {@linkcode WorkerExitedError}.
   * A thread worker is terminated (`Worker.terminate()`) whatever the signal, and its status
   * reads as a `SIGKILL`'s.
   *
   * @param signal The signal.
   * @default {"SIGKILL"}
   * @returns The exit status, once everything is released.
   */
  kill(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
  /**
   * Lets this program exit while the worker is idle: an unref'd worker keeps the program
   * alive only while a call made through `remote` is in flight. When the program exits the
   * worker's stdin ends and it exits too; `close()` is still the clean way to stop it.
   * A thread worker ends with the program. (Deno's `Worker` has no public `unref()`: conduit
   * uses the internal hook Deno's own `node:worker_threads` uses, and where a Deno release
   * lacks it, an unref'd thread keeps the program alive until it is closed.)
   */
  unref(): void;
  /** Undoes {@linkcode unref}: the worker keeps the program alive until it is closed. */
  ref(): void;
}
