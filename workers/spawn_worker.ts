/**
 * The parent's side: {@linkcode spawnWorker} starts a worker module with this Deno executable
 * (or any command that speaks the conduit protocol), with only the permissions you grant,
 * and returns a {@linkcode WorkerHandle} with a typed `remote`.
 *
 * Lifecycle, with the defaults exported below:
 * - `close()`: GOODBYE, in-flight calls drain (up to `drainTimeout`, 5 s), the worker's stdin
 *   closes and it exits by itself; if it has not within `exitTimeout` (1 s) it gets `SIGTERM`,
 *   and `killTimeout` (1 s) later `SIGKILL`.
 * - A worker that exits, crashes or is killed fails every pending call at once with
 *   {@linkcode WorkerExitedError} (exit code or signal, last stderr lines).
 * - No worker outlives this process. On Linux a worker module is started through util-linux
 *   `setpriv --pdeathsig KILL` when it is installed, so the kernel kills it as this process
 *   dies, even by `SIGKILL` and even while the worker is busy. When this process exits
 *   (`Deno.exit()`, the program's end, an exit from your own signal handler) the workers
 *   still running are killed. Otherwise a worker's stdin reaches its end and the worker
 *   exits as soon as it is idle (the only route on macOS and Windows, and for a
 *   {@linkcode WorkerCommand}, when this process is killed by a signal).
 * - conduit installs no signal listener: your `SIGINT`/`SIGTERM` handler runs once, and your
 *   workers serve on during your graceful shutdown.
 *
 * @example
 * ```ts
 * import { spawnWorker } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 * import type { EchoApi } from "../examples/_echo_worker.ts";
 *
 * const url = new URL("../examples/_echo_worker.ts", import.meta.url);
 * const worker = await spawnWorker<EchoApi>(url);
 * assert.equal(await worker.remote.echo("hi"), "hi");
 * assert.deepEqual(await Array.fromAsync(worker.remote.count(3)), [1, 2, 3]);
 * const status = await worker.close();
 * assert.equal(status.code, 0);
 * ```
 *
 * @module
 */

import { integerOption, numberOption } from "../_options.ts";
import { type ChannelOptions, DEFAULT_DRAIN_TIMEOUT } from "../channel/channel.ts";
import { jsonCodec } from "../codecs/json.ts";
import type { Codec } from "../codecs/types.ts";
import type { Transport } from "../transports/types.ts";
import type { CheckedHandlers } from "../channel/types.ts";
import { defaultWorkerCodec } from "./_default_codec.ts";
import { moduleSpecifier, workerName } from "./_module_specifier.ts";
import { spawnProcess } from "./_parent_death.ts";
import { quietPreloadUrl } from "./_quiet_preload.ts";
import { WorkerProcess } from "./_worker_process.ts";
import type { WorkerSocket } from "./_worker_socket.ts";
import { spawnThread } from "./_spawn_thread.ts";
import { withWorkerDefaults } from "./_worker_channel.ts";
import { WORKER_ENV, WORKER_SOCKET_ENV } from "./worker_env.ts";
import type { WorkerHandle } from "./worker_handle.ts";
import {
  permissionFlags,
  withSocketGrants,
  withWorkerEnvGrant,
  type WorkerPermissions,
} from "./worker_permissions.ts";

export { DEFAULT_DRAIN_TIMEOUT };
export type { WorkerHandle, WorkerPermissions };
// The channel types this API shows, so that its documentation is complete on its own.
export type * from "../channel/_shown_types.ts";

/** The default {@linkcode SpawnWorkerOptions.exitTimeout}: 1 s. */
export const DEFAULT_EXIT_TIMEOUT = 1_000;
/** The default {@linkcode SpawnWorkerOptions.killTimeout}: 1 s. */
export const DEFAULT_KILL_TIMEOUT = 1_000;
/** The default {@linkcode SpawnWorkerOptions.stderrTailLines}: 20 lines. */
export const DEFAULT_STDERR_TAIL_LINES = 20;
/** The default {@linkcode SpawnWorkerOptions.transport}: `"stdio"`. */
export const DEFAULT_WORKER_TRANSPORT: WorkerTransportKind = "stdio";

/**
 * The transport between parent and worker: the worker's stdin/stdout, or a Unix socket
 * (stdin stays piped then, so the worker still notices when the parent is gone).
 */
export type WorkerTransportKind = "stdio" | "unix";

/**
 * A program that speaks the conduit protocol over its stdin/stdout (or connects to the Unix
 * socket named in `CONDUIT_WORKER_SOCKET`), spawned as is: no Deno flags, no permissions.
 *
 * @example
 * ```ts
 * import type { WorkerCommand } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * const python: WorkerCommand = { command: "python3", args: ["peer.py", "--stdio"] };
 * assert.equal(python.command, "python3");
 * ```
 */
export interface WorkerCommand {
  /** The program (looked up in `PATH` unless it is a path). */
  command: string | URL;
  /**
   * Its arguments.
   *
   * @default {[]}
   */
  args?: readonly string[];
}

/**
 * Options for {@linkcode spawnWorker}: how to start the worker, and the channel's options
 * (`handlers` for call-backs, `maxInFlight`, `heartbeat`, `defaultTimeout`, …).
 *
 * Worker defaults differ from a plain channel's: no call deadline
 * ({@linkcode DEFAULT_WORKER_CALL_TIMEOUT}), no heartbeat, stack traces shared, and the
 * structured codec for a worker module.
 *
 * @typeParam Local The handler object this side serves to the worker.
 */
export interface SpawnWorkerOptions<Local extends object = object>
  extends Omit<ChannelOptions<Local>, "codec"> {
  /**
   * The channel codec; the worker must use one of the same `name`. A worker module gets the
   * structured codec, which `serveWorker` uses by default too (`Date`, `Map`, `Set`,
   * `bigint`, typed arrays and `undefined` cross as they are; what cannot cross is a
   * `CodecError`). A {@linkcode WorkerCommand}, usually a peer in another language, gets
   * JSON; pass `codec` to use MessagePack or the structured codec with it.
   *
   * @default {structuredCodec()} for a module, {jsonCodec()} for a command
   */
  codec?: Codec<unknown>;
  /**
   * The deadline of a call that sets no `timeout`, in milliseconds.
   *
   * @default {DEFAULT_WORKER_CALL_TIMEOUT} (Infinity: none)
   */
  defaultTimeout?: number;
  /**
   * Run the module as a Web Worker (a thread of this process) instead of a subprocess: the
   * same `remote`, streams, cancellation and errors, a faster start, large byte buffers
   * moved between threads rather than piped; but a thread shares this process's memory,
   * crashes of the runtime and permissions (see `permissions`). Options that only make sense
   * for a process (`denoArgs`, `args`, `cwd`, `env`, `clearEnv`, `transport`, `stderr`,
   * `stdout`, `stderrTailLines`, `exitTimeout`, `killTimeout`, a {@linkcode WorkerCommand})
   * are a `TypeError` with it. Inside the module `serveWorker` serves over `self`.
   *
   * @default {false}
   */
  thread?: boolean;
  /**
   * What the worker module may do. Ignored for a {@linkcode WorkerCommand}.
   *
   * A thread worker (`thread: true`) without `permissions` has this process's permissions.
   * With them it gets exactly these, which Deno allows only with its worker-options feature
   * on (`--unstable-worker-options`, or `"unstable": ["worker-options"]` in deno.json):
   * otherwise `spawnWorker` throws `ThreadPermissionsError` rather than let Deno end the
   * process.
   *
   * @default {{}} (nothing) for a process; this process's permissions for a thread
   */
  permissions?: WorkerPermissions;
  /**
   * Whether Deno's worker-options feature is on in this process, which a thread worker with
   * `permissions` needs. conduit finds out by itself when this process has every permission
   * (`-A`): it reads its command line and config file. Otherwise Deno hides both (reading
   * `/proc/self/cmdline` takes `--allow-all`), so say `true` when you run with
   * `--unstable-worker-options` or `"unstable": ["worker-options"]`. A wrong `true` lets Deno
   * exit the process (code 70) as the thread starts.
   *
   * @default {undefined} (found out where conduit can; else taken as off)
   */
  unstableWorkerOptions?: boolean;
  /**
   * More flags for `deno run`, before the module (e.g. `--v8-flags=--max-old-space-size=256`,
   * `--config=deno.json`). Ignored for a {@linkcode WorkerCommand}.
   *
   * @default {[]}
   */
  denoArgs?: readonly string[];
  /**
   * Arguments for the worker module (its `Deno.args`).
   *
   * @default {[]}
   */
  args?: readonly string[];
  /**
   * The worker's working directory.
   *
   * @default {undefined} (ours)
   */
  cwd?: string | URL;
  /**
   * Environment variables to set for the worker, on top of ours unless `clearEnv`. A Deno
   * worker can only read the ones its `permissions.env` allows.
   *
   * @default {undefined}
   */
  env?: Record<string, string>;
  /**
   * Start the worker with only the variables in `env`.
   *
   * @default {false}
   */
  clearEnv?: boolean;
  /**
   * The transport; see {@linkcode WorkerTransportKind}.
   *
   * @default {DEFAULT_WORKER_TRANSPORT} ("stdio")
   */
  transport?: WorkerTransportKind;
  /**
   * Where the worker's stderr goes, line by line: `"prefix"` writes each line to our stderr
   * after `[name pid] `, `"discard"` drops it, a function receives each line. The last
   * `stderrTailLines` are kept either way. Over the stdio transport a worker module's
   * `console.log` and `Deno.stdout` writes arrive here too: its stdout carries the channel.
   *
   * @default {"prefix"}
   */
  stderr?: "prefix" | "discard" | ((line: string) => void);
  /**
   * Where the worker's stdout goes, line by line, when it does not carry the channel
   * (`transport: "unix"`): `"prefix"` writes each line to our stdout after `[name pid] `,
   * `"discard"` drops it, a function receives each line.
   *
   * @default {"prefix"}
   */
  stdout?: "prefix" | "discard" | ((line: string) => void);
  /**
   * How many of the worker's last stderr lines to keep for {@linkcode WorkerExitedError}.
   *
   * @default {DEFAULT_STDERR_TAIL_LINES} (20)
   */
  stderrTailLines?: number;
  /**
   * The worker's name in messages and stderr prefixes.
   *
   * @default the module's file name, or the command's
   */
  name?: string;
  /**
   * How long `close()` lets in-flight calls finish after GOODBYE, in milliseconds.
   *
   * @default {DEFAULT_DRAIN_TIMEOUT} (5000)
   */
  drainTimeout?: number;
  /**
   * How long to wait for the worker to exit once its connection is closed, in milliseconds,
   * before sending it `SIGTERM`.
   *
   * @default {DEFAULT_EXIT_TIMEOUT} (1000)
   */
  exitTimeout?: number;
  /**
   * How long to wait after `SIGTERM` before `SIGKILL`, in milliseconds.
   *
   * @default {DEFAULT_KILL_TIMEOUT} (1000)
   */
  killTimeout?: number;
  /**
   * Whether errors sent to the worker include stack traces.
   *
   * @default {true}
   */
  trustPeer?: boolean;
}

/**
 * Spawns a worker and opens a typed channel to it.
 *
 * A module is run as `deno run --no-prompt <permission flags> <denoArgs> <module> <args>`
 * with {@linkcode Deno.execPath}: it calls `serveWorker(handlers)`, and exporting
 * `typeof handlers` as a type gives the parent its `Api`. A {@linkcode WorkerCommand} is
 * spawned as is. Either way the worker's stderr is read line by line (see `stderr`).
 *
 * @typeParam Api The handler interface the worker serves.
 * @typeParam Local The handler object this side serves to the worker (call-backs).
 * @param worker The worker module, or a command. Give a module as a URL
 * (`new URL("./w.ts", import.meta.url)`, which resolves like an import) or an absolute path;
 * a relative path string is refused, since it would resolve against the working directory.
 * @param options Permissions, codec, transport, timeouts; see {@linkcode SpawnWorkerOptions}.
 * @returns The handle, once the handshake has succeeded.
 * @throws {WorkerExitedError} When the worker exited before the handshake (its stderr tail
 * says why, e.g. a module that does not exist).
 * @throws {HandshakeError} When the worker answered with another codec or protocol version.
 * @throws {Deno.errors.NotFound} When the command does not exist.
 * @throws {TypeError} When the module is a relative path string, or an option does not fit
 * a thread worker.
 * @throws {ThreadPermissionsError} When a thread worker is given `permissions` and Deno's
 * worker-options feature is not on.
 *
 * @example A thread worker: the same module as a Web Worker of this process
 * ```ts
 * import { spawnWorker } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 * import type { EchoApi } from "../examples/_echo_worker.ts";
 *
 * const url = new URL("../examples/_echo_worker.ts", import.meta.url);
 * await using worker = await spawnWorker<EchoApi>(url, { thread: true });
 * assert.equal(await worker.remote.echo("hi"), "hi");
 * assert.deepEqual(await Array.fromAsync(worker.remote.count(3)), [1, 2, 3]);
 * assert.equal(worker.thread, true);
 * assert.equal(worker.pid, Deno.pid); // a thread of this process
 * ```
 *
 * @example A worker that fails to start
 * ```ts
 * import { spawnWorker, WorkerExitedError } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * const missing = new URL("./no_such_worker.ts", import.meta.url);
 * const err = await spawnWorker(missing, { stderr: "discard" }).then(() => null, (e) => e);
 * assert.ok(err instanceof WorkerExitedError);
 * assert.equal(err.code, 1);
 * assert.ok(err.stderrTail.some((line: string) => line.includes("no_such_worker.ts")));
 * ```
 */
export async function spawnWorker<
  Api extends object,
  Local extends CheckedHandlers<Local> = object,
>(
  worker: string | URL | WorkerCommand,
  options: SpawnWorkerOptions<Local> = {},
): Promise<WorkerHandle<Api>> {
  if (options.thread) return await spawnThread<Api, Local>(worker, options);
  const isCommand = typeof worker === "object" && !(worker instanceof URL);
  const {
    codec: givenCodec,
    permissions = {},
    denoArgs = [],
    args = [],
    cwd,
    env,
    clearEnv,
    transport: kind = DEFAULT_WORKER_TRANSPORT,
    stderr = "prefix",
    stdout = "prefix",
    stderrTailLines = DEFAULT_STDERR_TAIL_LINES,
    name: givenName,
    drainTimeout = DEFAULT_DRAIN_TIMEOUT,
    exitTimeout = DEFAULT_EXIT_TIMEOUT,
    killTimeout = DEFAULT_KILL_TIMEOUT,
    thread: _,
    unstableWorkerOptions: _unstable,
    ...channelOptions
  } = options;
  numberOption("exitTimeout", exitTimeout, 0);
  numberOption("killTimeout", killTimeout, 0);
  integerOption("stderrTailLines", stderrTailLines, 0);
  if (kind !== "stdio" && kind !== "unix") {
    throw new TypeError(`transport must be "stdio" or "unix", got ${JSON.stringify(kind)}`);
  }
  if (!isCommand) moduleSpecifier(worker);
  const name = givenName ?? workerName(isCommand ? worker.command : worker);
  // The default codec of a module loads while the child starts (awaited once it runs).
  const loadingCodec = givenCodec ?? (isCommand ? jsonCodec() : defaultWorkerCodec());

  let socket: WorkerSocket | undefined;
  const childEnv: Record<string, string> = { ...env, [WORKER_ENV]: "1" };
  let grants = withWorkerEnvGrant(permissions);
  if (kind === "unix") {
    // The socket transport loads only for a worker that uses it.
    socket = await (await import("./_worker_socket.ts")).WorkerSocket.open();
    childEnv[WORKER_SOCKET_ENV] = socket.path;
    grants = withSocketGrants(grants, socket.path);
  }

  let child: Deno.ChildProcess;
  try {
    const [command, commandArgs] = isCommand
      ? [worker.command, [...(worker.args ?? []), ...args]]
      : [
        Deno.execPath(),
        denoRunArgs(worker, { permissions: grants, denoArgs, args, quiet: kind === "stdio" }),
      ];
    child = spawnProcess(command, {
      args: commandArgs,
      cwd,
      env: childEnv,
      clearEnv,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }, !isCommand);
  } catch (error) {
    await socket?.close();
    throw error;
  }

  const codec = await loadingCodec;
  const process = new WorkerProcess<Api>(child, {
    name,
    stderr,
    stdout,
    stderrTailLines,
    exitTimeout,
    killTimeout,
  });
  let connection: Transport;
  try {
    connection = socket
      ? await process.acceptSocket(socket, channelOptions.handshakeTimeout)
      : process.stdio;
  } catch (error) {
    throw await process.failStart(error);
  } finally {
    await socket?.close();
  }
  return await process.open(
    connection,
    withWorkerDefaults({ ...channelOptions, drainTimeout, codec }),
  );
}

/** The `deno run` arguments that start the worker module `module`. */
function denoRunArgs(
  module: string | URL,
  options: {
    permissions: WorkerPermissions;
    denoArgs: readonly string[];
    args: readonly string[];
    /** Whether to run the preload that keeps stdout for the channel. */
    quiet: boolean;
  },
): string[] {
  return [
    "run",
    "--no-prompt",
    ...permissionFlags(options.permissions),
    ...(options.quiet ? ["--preload", quietPreloadUrl()] : []),
    ...options.denoArgs,
    moduleSpecifier(module),
    ...options.args,
  ];
}
