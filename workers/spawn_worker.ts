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
import { channelCodecs, DEFAULT_DRAIN_TIMEOUT } from "../channel/channel.ts";
import { jsonCodec } from "../codecs/json.ts";
import type { Transport } from "../transports/types.ts";
import type { CheckedHandlers } from "../channel/types.ts";
import {
  DEFAULT_EXIT_TIMEOUT,
  DEFAULT_KILL_TIMEOUT,
  DEFAULT_STDERR_TAIL_LINES,
  DEFAULT_WORKER_V8_FLAGS,
  defaultWorkerCodec,
  defaultWorkerTransport,
  moduleSpecifier,
  moduleUrl,
  permissionFlags,
  type SpawnWorkerOptions,
  withSocketGrants,
  withWorkerEnvGrant,
  WORKER_SOCKET_PARENT,
  type WorkerCommand,
  workerName,
  type WorkerPermissions,
  type WorkerRuntime,
} from "./spawn_worker_options.ts";
import { spawnProcess, WorkerProcess } from "./_worker_process.ts";
import type { ChildProcessLike } from "../_spawn.ts";
import { execPath, fileUrlToPath, onDeno, runtimeName } from "../_runtime.ts";
import type { WorkerSocket } from "./_worker_socket.ts";
import { spawnThread } from "./_spawn_thread.ts";
import { withWorkerDefaults } from "./_worker_channel.ts";
import {
  consoleToStderr,
  nodeQuietPreloadUrl,
  WORKER_ENV,
  WORKER_SOCKET_ENV,
} from "./worker_env.ts";
import type { WorkerHandle } from "./worker_handle.ts";
import { REAL_STDOUT_KEY } from "../transports/_byte_channel_transport.ts";

export { DEFAULT_DRAIN_TIMEOUT };
export * from "./spawn_worker_options.ts";
export type { WorkerHandle, WorkerPermissions };
// The channel types this API shows, so that its documentation is complete on its own.
export type * from "../channel/_shown_types.ts";

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
 * @throws {HandshakeError} When the worker answered with another codec or protocol version,
 * or (`handshake_timeout`, and it is killed) did not answer within `handshakeTimeout` while
 * it kept running: a module that does not call `serveWorker()`.
 * @throws {Deno.errors.NotFound} When the command does not exist.
 * @throws {Deno.errors.NotSupported} When a worker module would run as a process in a binary
 * made by `deno compile`, whose `Deno.execPath()` is not deno (see docs/workers.md).
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
  // A codec option that is not a codec (`rawCodec` for `rawCodec()`) fails before anything starts.
  channelCodecs(options);
  if (options.thread) return await spawnThread<Api, Local>(worker, options);
  const isCommand = typeof worker === "object" && !(worker instanceof URL);
  const {
    codec: givenCodec,
    permissions,
    denoArgs,
    runtime = runtimeName(),
    runtimePath,
    runtimeArgs,
    args = [],
    cwd,
    env,
    clearEnv,
    transport: kind = defaultWorkerTransport(isCommand),
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
  checkRuntime(runtime, { isCommand, options });
  const name = givenName ?? workerName(isCommand ? worker.command : worker);
  const refusal = isCommand || runtime !== "deno" || !onDeno()
    ? undefined
    : standaloneRefusal(Deno.build.standalone, { name, specifier: moduleSpecifier(worker) });
  if (refusal !== undefined) throw refusal;
  // The default codec of a module loads while the child starts (awaited once it runs).
  const loadingCodec = givenCodec ?? (isCommand ? jsonCodec() : defaultWorkerCodec());

  let socket: WorkerSocket | undefined;
  // Empty over stdio (docs/protocol.md §13): this process may have the variable itself (a
  // worker spawning a worker), naming a socket that is not the child's.
  const childEnv: Record<string, string> = { ...env, [WORKER_ENV]: "1", [WORKER_SOCKET_ENV]: "" };
  let grants = withWorkerEnvGrant(permissions ?? {});
  if (kind === "unix") {
    // The socket transport loads only for a worker that uses it.
    socket = await (await import("./_worker_socket.ts")).WorkerSocket.open().catch((error) => {
      throw withSocketHint(error);
    });
    childEnv[WORKER_SOCKET_ENV] = socket.path;
    grants = withSocketGrants(grants, socket.path);
  }

  let child: ChildProcessLike;
  try {
    const [command, commandArgs] = isCommand
      ? [worker.command, [...(worker.args ?? []), ...args]]
      : [
        runtimePath ?? (runtime === runtimeName() ? execPath() : runtime),
        runtime === "deno"
          ? denoRunArgs(worker, {
            permissions: grants,
            denoArgs: denoArgs ?? [],
            args,
            quiet: kind === "stdio",
          })
          : [
            ...(kind === "stdio" ? quietPreloadArgs(runtime) : []),
            ...(runtimeArgs ?? []),
            modulePath(worker, runtime),
            ...args,
          ],
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
    command: isCommand,
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

/** Refuses options that do not fit `runtime`. */
function checkRuntime(
  runtime: WorkerRuntime,
  { isCommand, options }: { isCommand: boolean; options: SpawnWorkerOptions<object> },
): void {
  if (runtime !== "deno" && runtime !== "node" && runtime !== "bun") {
    throw new TypeError(
      `runtime must be "deno", "node" or "bun", got ${JSON.stringify(runtime)}`,
    );
  }
  const given = (option: keyof SpawnWorkerOptions<object>) => options[option] !== undefined;
  const refuse = (option: string, why: string) => {
    throw new TypeError(`spawnWorker: ${option} ${why}`);
  };
  if (isCommand) {
    for (const option of ["runtime", "runtimePath", "runtimeArgs"] as const) {
      if (given(option)) refuse(option, "does not apply to a WorkerCommand, which runs as is");
    }
    return;
  }
  if (runtime === "deno") {
    if (given("runtimeArgs")) refuse("runtimeArgs", "is for Node and Bun workers: use denoArgs");
    return;
  }
  if (given("permissions")) {
    refuse(
      "permissions",
      `are Deno's: a ${runtime} worker runs with this user's rights` +
        (runtime === "node" ? " (Node's --permission flags go in runtimeArgs)" : ""),
    );
  }
  if (given("denoArgs")) refuse("denoArgs", `are for Deno workers: use runtimeArgs for ${runtime}`);
}

/** Node's preload data: URL, built once. */
let nodeUrl: string | undefined;

/**
 * The flags that make a Node or Bun worker keep its stdout for the channel before its module
 * loads (see quietPreloadUrl for Deno's): Node imports a data: URL; Bun preloads only files, so
 * it gets workers/_node_preload.ts when conduit is local files (else `serveWorker` moves the
 * console itself, once it runs).
 */
function quietPreloadArgs(runtime: "node" | "bun"): string[] {
  if (runtime === "node") return ["--import", nodeUrl ??= nodeQuietPreloadUrl(REAL_STDOUT_KEY)];
  const preload = new URL("./_node_preload.ts", import.meta.url);
  return preload.protocol === "file:" ? ["--preload", fileUrlToPath(preload)] : [];
}

/** The file a Node or Bun worker runs: a local module's path. */
function modulePath(module: string | URL, runtime: WorkerRuntime): string {
  const url = moduleUrl(module);
  if (url.protocol !== "file:") {
    throw new TypeError(
      `A ${runtime} worker module must be a local file, got ${url.href}`,
    );
  }
  return fileUrlToPath(url);
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
  const ownV8Flags = options.denoArgs.some((arg) =>
    arg === "--v8-flags" || arg.startsWith("--v8-flags=")
  );
  return [
    "run",
    "--no-prompt",
    ...permissionFlags(options.permissions),
    ...(options.quiet ? ["--preload", quietPreloadUrl()] : []),
    ...(ownV8Flags ? [] : [`--v8-flags=${DEFAULT_WORKER_V8_FLAGS.join(",")}`]),
    ...options.denoArgs,
    moduleSpecifier(module),
    ...options.args,
  ];
}

// A binary made by `deno compile` is not deno: its `Deno.execPath()` is the app itself, so
// `deno run <module>` through it would start the app again (with the worker module as an
// argument), not the worker. spawnWorker refuses a module there and says the two ways that work.

/**
 * The error spawnWorker throws for a worker module in a `deno compile` binary, or `undefined`
 * when the module may run: `standalone` is `Deno.build.standalone`, a seam for the tests
 * (a compiled binary cannot be built without `denort`).
 */
export function standaloneRefusal(
  standalone: boolean,
  module: { name: string; specifier: string },
): Deno.errors.NotSupported | undefined {
  if (!standalone) return undefined;
  const { name, specifier } = module;
  return new Deno.errors.NotSupported(
    `spawnWorker cannot run the worker module ${name} as a process in a program made by ` +
      `deno compile: Deno.execPath() is the program itself (${Deno.execPath()}), not deno. ` +
      `Run it as a thread, spawnWorker(url, { thread: true }), with the module embedded by ` +
      `deno compile --include <module>; or run it with a deno installed on the machine, ` +
      `spawnWorker({ command: "deno", args: ["run", <permission flags>, ` +
      `${JSON.stringify(specifier)}] }, { codec: structuredCodec() })`,
  );
}

// The code `spawnWorker` runs before a worker module on the stdio transport
// (`deno run --preload <data: URL>`): everything that would print to the channel's pipe —
// `console.log` and its siblings, `Deno.stdout` — prints to stderr instead, which the parent
// forwards line by line. So a `console.log` at module load, before `serveWorker`, or a
// `Deno.stdout.writeSync` in a handler cannot land between two frames; the real stdout is kept
// for the stdio transport (`REAL_STDOUT_KEY` in `transports/_byte_channel_transport.ts`). `node:process`'s `process.stdout`
// and subprocesses inheriting fd 1 still reach the pipe (moving fd 1 itself needs FFI); the
// parent then fails with an error that quotes what was written.
//
// A data: URL, built from the source of two self-contained functions: it needs no read
// permission, no network for a remote (JSR) copy of conduit, and no TypeScript module load.
let url: string | undefined;

/** The `--preload` module, as a data: URL. */
export function quietPreloadUrl(): string {
  url ??= "data:text/javascript," +
    encodeURIComponent(`(${quietStdout})(${consoleToStderr}, ${JSON.stringify(REAL_STDOUT_KEY)});`);
  return url;
}

/** Keeps the real stdout under `Symbol.for(key)`, points `Deno.stdout` at stderr, moves the console. */
function quietStdout(moveConsole: () => unknown, key: string): void {
  const real = Symbol.for(key);
  if (real in globalThis) return;
  Object.defineProperty(globalThis, real, { value: Deno.stdout });
  Object.defineProperty(Deno, "stdout", {
    value: Deno.stderr,
    configurable: true,
    writable: true,
    enumerable: true,
  });
  moveConsole();
}

/**
 * A permission error of making the worker's socket, saying that `transport: "unix"` is why
 * and what it needs (the default picks stdio where the parent may not make a socket).
 */
function withSocketHint(error: unknown): unknown {
  if (!(error instanceof Error) || !["NotCapable", "PermissionDenied"].includes(error.name)) {
    return error;
  }
  error.message += `: transport: "unix" makes the worker's socket under ${WORKER_SOCKET_PARENT}, ` +
    `which needs --allow-read=${WORKER_SOCKET_PARENT} --allow-write=${WORKER_SOCKET_PARENT} ` +
    `--allow-net (or leave transport unset, or choose transport: "stdio")`;
  return error;
}
