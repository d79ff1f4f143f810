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
 * - When this process exits, even by `SIGKILL`, the worker's stdin reaches its end and the
 *   worker exits; on `SIGINT`, `SIGTERM` or `SIGHUP` this process kills its workers first.
 *
 * @example
 * ```ts
 * import { spawnWorker } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 * import type { EchoApi } from "../workers/_testdata/echo_worker.ts";
 *
 * const url = new URL("../workers/_testdata/echo_worker.ts", import.meta.url);
 * const worker = await spawnWorker<EchoApi>(url);
 * assert.equal(await worker.remote.echo("hi"), "hi");
 * assert.deepEqual(await Array.fromAsync(worker.remote.count(3)), [1, 2, 3]);
 * const status = await worker.close();
 * assert.equal(status.code, 0);
 * ```
 *
 * @module
 */

import { Channel, type ChannelOptions, DEFAULT_DRAIN_TIMEOUT } from "../channel/channel.ts";
import { ConnectionClosedError, HandshakeError } from "../channel/errors.ts";
import type { MethodName, RemoteArgs, RemoteOf } from "../channel/types.ts";
import { jsonCodec } from "../codecs/json.ts";
import type { Codec } from "../codecs/types.ts";
import { type ChildTransport, childTransport } from "../transports/stdio.ts";
import type { Listener, Transport } from "../transports/types.ts";
import { listenUnix } from "../transports/unix.ts";
import { guardWorker } from "./_signal_guard.ts";
import { StderrLines } from "./_stderr_lines.ts";
import { type DualCall, WorkerCall } from "./_worker_call.ts";
import { WorkerExitedError } from "./errors.ts";
import { DEFAULT_WORKER_TRUST_PEER, WORKER_SOCKET_ENV } from "./serve_worker.ts";

export { DEFAULT_DRAIN_TIMEOUT };
// The channel types this API shows, so that its documentation is complete on its own.
export type * from "../channel/types.ts";
export type {
  Channel,
  ChannelOptions,
  HeartbeatOptions,
  MethodCodec,
  PeerInfo,
  ResultOf,
} from "../channel/channel.ts";
export type { Codec };

/** The default {@linkcode SpawnWorkerOptions.exitTimeout}: 1 s. */
export const DEFAULT_EXIT_TIMEOUT = 1_000;
/** The default {@linkcode SpawnWorkerOptions.killTimeout}: 1 s. */
export const DEFAULT_KILL_TIMEOUT = 1_000;
/** The default {@linkcode SpawnWorkerOptions.stderrTailLines}: 20 lines. */
export const DEFAULT_STDERR_TAIL_LINES = 20;
/** The default {@linkcode SpawnWorkerOptions.transport}: `"stdio"`. */
export const DEFAULT_WORKER_TRANSPORT: WorkerTransportKind = "stdio";

/** How long after the worker exited its stderr may stay open (a grandchild holds it). */
const STDERR_LINGER_MS = 200;
/** How long after the worker exited its connection may stay open before it is aborted. */
const CONNECTION_LINGER_MS = 250;

/**
 * The transport between parent and worker: the worker's stdin/stdout, or a Unix socket
 * (stdin stays piped then, so the worker still notices when the parent is gone).
 */
export type WorkerTransportKind = "stdio" | "unix";

/**
 * Deno permissions for a worker module, as `deno run` flags: `true` grants all
 * (`--allow-net`), a list grants those (`--allow-read=/data,/tmp`), `false` or absent grants
 * nothing. The worker gets no permission you do not list, and never a prompt.
 *
 * @example
 * ```ts
 * import type { WorkerPermissions } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * const permissions: WorkerPermissions = { read: ["/data"], net: false };
 * assert.deepEqual(permissions.read, ["/data"]);
 * ```
 */
export interface WorkerPermissions {
  /** `--allow-read`. @default {false} */
  read?: boolean | readonly (string | URL)[];
  /** `--allow-write`. @default {false} */
  write?: boolean | readonly (string | URL)[];
  /** `--allow-net` (hosts, `host:port`). @default {false} */
  net?: boolean | readonly string[];
  /** `--allow-env` (variable names). @default {false} */
  env?: boolean | readonly string[];
  /** `--allow-run` (programs). @default {false} */
  run?: boolean | readonly (string | URL)[];
  /** `--allow-sys` (API names such as `hostname`). @default {false} */
  sys?: boolean | readonly string[];
  /** `--allow-ffi` (library paths). @default {false} */
  ffi?: boolean | readonly (string | URL)[];
  /** `--allow-import` (hosts to import code from). @default {false} */
  import?: boolean | readonly string[];
}

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
 * @typeParam Local The handler object this side serves to the worker.
 */
export interface SpawnWorkerOptions<Local extends object = object>
  extends Omit<ChannelOptions<Local>, "codec"> {
  /**
   * The channel codec; the worker must use one of the same `name`.
   *
   * @default {jsonCodec()}
   */
  codec?: Codec<unknown>;
  /**
   * What the worker module may do. Ignored for a {@linkcode WorkerCommand}.
   *
   * @default {{}} (nothing)
   */
  permissions?: WorkerPermissions;
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
   * `stderrTailLines` are kept either way.
   *
   * @default {"prefix"}
   */
  stderr?: "prefix" | "discard" | ((line: string) => void);
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
 * A running worker: its typed `remote`, and its process. Get one from
 * {@linkcode spawnWorker}; dispose of it with `await using`, `close()` or `kill()`.
 *
 * @typeParam Api The handler interface the worker serves.
 *
 * @example Killing a worker fails its pending calls
 * ```ts
 * import { spawnWorker, WorkerExitedError } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 * import type { EchoApi } from "../workers/_testdata/echo_worker.ts";
 *
 * const url = new URL("../workers/_testdata/echo_worker.ts", import.meta.url);
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
  /** The worker's process id. */
  readonly pid: number;
  /** The worker's name, as in messages. */
  readonly name: string;
  /**
   * Resolves once the worker has exited and every pipe and the connection are released, with
   * its exit status (`code`, and the `signal` that ended it, if any).
   */
  readonly exited: Promise<Deno.CommandStatus>;
  /** The worker's last stderr lines, oldest first. */
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
   * `SIGKILL` (see the timeouts in {@linkcode SpawnWorkerOptions}). Never rejects.
   *
   * @returns The exit status, once everything is released.
   */
  close(): Promise<Deno.CommandStatus>;
  /**
   * Sends the worker a signal at once; pending calls fail with {@linkcode WorkerExitedError}.
   *
   * @param signal The signal.
   * @default {"SIGKILL"}
   * @returns The exit status, once everything is released.
   */
  kill(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
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
 * @param worker The worker module (path or URL), or a command.
 * @param options Permissions, codec, transport, timeouts; see {@linkcode SpawnWorkerOptions}.
 * @returns The handle, once the handshake has succeeded.
 * @throws {WorkerExitedError} When the worker exited before the handshake (its stderr tail
 * says why, e.g. a module that does not exist).
 * @throws {HandshakeError} When the worker answered with another codec or protocol version.
 * @throws {Deno.errors.NotFound} When the command does not exist.
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
export async function spawnWorker<Api extends object, Local extends object = object>(
  worker: string | URL | WorkerCommand,
  options: SpawnWorkerOptions<Local> = {},
): Promise<WorkerHandle<Api>> {
  const {
    codec = jsonCodec(),
    permissions = {},
    denoArgs = [],
    args = [],
    cwd,
    env,
    clearEnv,
    transport: kind = DEFAULT_WORKER_TRANSPORT,
    stderr = "prefix",
    stderrTailLines = DEFAULT_STDERR_TAIL_LINES,
    name: givenName,
    drainTimeout = DEFAULT_DRAIN_TIMEOUT,
    exitTimeout = DEFAULT_EXIT_TIMEOUT,
    killTimeout = DEFAULT_KILL_TIMEOUT,
    ...channelOptions
  } = options;
  nonNegative("exitTimeout", exitTimeout);
  nonNegative("killTimeout", killTimeout);
  if (!Number.isInteger(stderrTailLines) || stderrTailLines < 0) {
    throw new RangeError(`stderrTailLines must be an integer >= 0, got ${stderrTailLines}`);
  }
  if (kind !== "stdio" && kind !== "unix") {
    throw new TypeError(`transport must be "stdio" or "unix", got ${JSON.stringify(kind)}`);
  }
  const isCommand = typeof worker === "object" && !(worker instanceof URL);
  const name = givenName ?? workerName(isCommand ? worker.command : worker);

  let socket: { dir: string; path: string; listener: Listener } | undefined;
  const childEnv = { ...env };
  const grants = { ...permissions };
  if (kind === "unix") {
    const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cdw" });
    const path = `${dir}/w.sock`;
    try {
      socket = { dir, path, listener: await listenUnix(path) };
    } catch (error) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      throw error;
    }
    childEnv[WORKER_SOCKET_ENV] = path;
    // Deno checks connecting to a Unix socket against all three.
    grants.read = withGrant(grants.read, path);
    grants.write = withGrant(grants.write, path);
    grants.net = withGrant(grants.net, `unix:${path}`);
    grants.env = withGrant(grants.env, WORKER_SOCKET_ENV);
  }

  let child: Deno.ChildProcess;
  try {
    const [command, commandArgs] = isCommand
      ? [worker.command, [...(worker.args ?? []), ...args]]
      : [Deno.execPath(), [
        "run",
        "--no-prompt",
        ...permissionFlags(grants),
        ...denoArgs,
        worker instanceof URL ? worker.href : worker,
        ...args,
      ]];
    child = new Deno.Command(command, {
      args: commandArgs,
      cwd,
      env: childEnv,
      clearEnv,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (error) {
    if (socket) await closeSocket(socket);
    throw error;
  }

  const process = new WorkerProcess<Api>(child, {
    name,
    stderr,
    stderrTailLines,
    exitTimeout,
    killTimeout,
  });
  let transport: Transport;
  try {
    transport = socket
      ? await process.acceptSocket(socket.listener, channelOptions.handshakeTimeout)
      : process.stdio;
  } catch (error) {
    throw await process.failStart(error);
  } finally {
    if (socket) await closeSocket(socket);
  }
  return await process.open(transport, {
    trustPeer: DEFAULT_WORKER_TRUST_PEER,
    ...channelOptions,
    drainTimeout,
    codec,
  });
}

interface ProcessOptions {
  name: string;
  stderr: "prefix" | "discard" | ((line: string) => void);
  stderrTailLines: number;
  exitTimeout: number;
  killTimeout: number;
}

/** What the channel's transport needs from the worker process. */
interface ProcessControl {
  /** The process's stdin/stdout. */
  readonly stdio: ChildTransport;
  /** Waits for the process to exit, signalling it after the timeouts. */
  stop(): Promise<void>;
}

/** One worker process: its pipes, its stderr, its channel and how it is stopped. */
class WorkerProcess<Api extends object> implements WorkerHandle<Api>, ProcessControl {
  readonly pid: number;
  readonly name: string;
  readonly exited: Promise<Deno.CommandStatus>;
  /** The process's stdin/stdout as a transport; the channel's transport in stdio mode. */
  readonly stdio: ChildTransport;
  readonly #child: Deno.ChildProcess;
  readonly #stderr: StderrLines;
  readonly #options: ProcessOptions;
  readonly #unguard: () => void;
  /** Resolves with the status once the process has exited and its stderr is read. */
  readonly #status: Promise<Deno.CommandStatus>;
  #statusKnown = false;
  #channel: Channel<Api> | undefined;
  #remote: RemoteOf<Api> | undefined;
  /** Set once close() was called: connection errors are then expected. */
  #closing = false;
  /** Why this side killed the worker, for WorkerExitedError. */
  #stopReason: string | undefined;
  #stopping: Promise<void> | undefined;

  constructor(child: Deno.ChildProcess, options: ProcessOptions) {
    this.#child = child;
    this.pid = child.pid;
    this.name = options.name;
    this.#options = options;
    const prefix = `[${options.name} ${child.pid}] `;
    const onLine = options.stderr === "discard"
      ? undefined
      : options.stderr === "prefix"
      ? (line: string) => writeStderr(prefix + line + "\n")
      : options.stderr;
    this.#stderr = new StderrLines(child.stderr, options.stderrTailLines, onLine);
    // The transport must not read stderr: we do, for the tail.
    this.stdio = childTransport(withoutStderr(child), {
      // Our own timeouts decide when to signal; this is only a backstop.
      exitTimeoutMs: options.exitTimeout + options.killTimeout + 5_000,
    });
    this.#unguard = guardWorker(child);
    this.#status = child.status.then(async (status) => {
      this.#statusKnown = true;
      this.#unguard();
      const linger = setTimeout(() => this.#stderr.cancel(), STDERR_LINGER_MS);
      await this.#stderr.done;
      clearTimeout(linger);
      return status;
    });
    this.exited = this.#status.then(async (status) => {
      const channel = this.#channel;
      if (channel === undefined) {
        await this.stdio.abort();
        return status;
      }
      // The channel normally notices the exit by itself (its input ends); give it a moment
      // to read what the worker wrote before exiting, then make sure.
      const linger = setTimeout(
        () => void channel.abort(new ConnectionClosedError(`${this.name} exited`)),
        CONNECTION_LINGER_MS,
      );
      await channel.closed.catch(() => {});
      clearTimeout(linger);
      await this.stdio.close();
      return status;
    });
  }

  get remote(): RemoteOf<Api> {
    return this.#remote!;
  }

  get stderrTail(): readonly string[] {
    return this.#stderr.tail;
  }

  /** Accepts the worker's connection on `listener`, unless the worker exits first. */
  async acceptSocket(listener: Listener, timeout: number | undefined): Promise<Transport> {
    // stdout carries nothing in this mode; read it anyway so the worker never blocks on it.
    void this.stdio.readable.pipeTo(new WritableStream()).catch(() => {});
    const limit = timeout ?? DEFAULT_ACCEPT_TIMEOUT;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const iterator = listener[Symbol.asyncIterator]();
    try {
      const next = await Promise.race([
        iterator.next(),
        this.#child.status.then(() => {
          throw new ConnectionClosedError("The worker exited before it connected");
        }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(new ConnectionClosedError(`The worker did not connect within ${limit} ms`)),
            limit,
          );
        }),
      ]);
      if (next.done) throw new ConnectionClosedError("The listener closed");
      return new SocketWorkerTransport(next.value, this);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Opens the channel over `transport`; on failure stops the worker and throws why. */
  async open(transport: Transport, options: ChannelOptions): Promise<WorkerHandle<Api>> {
    const channel = new Channel<Api>(
      transport === this.stdio ? new StdioWorkerTransport(this.stdio, this) : transport,
      options,
    );
    this.#channel = channel;
    const translate = (error: unknown) => this.#translate(error);
    const remote = channel.remote as unknown as Record<
      string,
      (p: unknown, o: unknown) => DualCall
    >;
    const methods: Record<string, unknown> = Object.create(null);
    this.#remote = new Proxy(methods, {
      get(target, key) {
        if (typeof key !== "string" || key === "then") return undefined;
        return target[key] ??= (param: unknown, callOptions?: unknown) =>
          new WorkerCall(remote[key](param, callOptions), translate);
      },
    }) as RemoteOf<Api>;
    try {
      await channel.opened;
    } catch (error) {
      throw await this.failStart(error);
    }
    return this;
  }

  /** The worker did not start: stop it, release everything, and say why. */
  async failStart(error: unknown): Promise<unknown> {
    this.#closing = true;
    // A worker that is alive but failed the handshake gets no grace.
    const exitedAlready = await this.#exitsWithin(CONNECTION_LINGER_MS);
    if (!exitedAlready) this.#signal("SIGKILL");
    await this.#channel?.abort(error);
    const status = await this.exited;
    // A worker that answered with another codec or version exits because of it: the
    // mismatch is the news. One that went away during the handshake is explained by its exit.
    if (error instanceof HandshakeError && error.code !== "closed") return error;
    if (!exitedAlready && !(error instanceof ConnectionClosedError)) return error;
    return this.#exitError(status, error);
  }

  notify<K extends MethodName<Api>>(method: K, param: RemoteArgs<Api[K]>[0]): void {
    this.#channel!.notify(method, param);
  }

  async close(): Promise<Deno.CommandStatus> {
    this.#closing = true;
    await this.#channel?.close();
    return await this.exited;
  }

  kill(signal: Deno.Signal = "SIGKILL"): Promise<Deno.CommandStatus> {
    this.#stopReason ??= "kill() was called";
    this.#signal(signal);
    return this.exited;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close().then(() => {});
  }

  /**
   * Stops the process once its connection is closed: wait `exitTimeout` for it to exit, then
   * SIGTERM, `killTimeout`, SIGKILL.
   */
  stop(): Promise<void> {
    return this.#stopping ??= this.#stop();
  }

  async #stop(): Promise<void> {
    const { exitTimeout, killTimeout } = this.#options;
    if (!await this.#exitsWithin(exitTimeout)) {
      this.#signal("SIGTERM");
      if (!await this.#exitsWithin(killTimeout)) this.#signal("SIGKILL");
    }
    await this.#child.status;
  }

  async #exitsWithin(ms: number): Promise<boolean> {
    if (this.#statusKnown) return true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const exited = await Promise.race([
      this.#child.status.then(() => true),
      new Promise<boolean>((resolve) => timer = setTimeout(resolve, ms, false)),
    ]);
    clearTimeout(timer);
    return exited;
  }

  #signal(signal: Deno.Signal): void {
    if (this.#statusKnown) return;
    try {
      this.#child.kill(signal);
    } catch {
      // It has exited already.
    }
  }

  /** Turns a connection error into WorkerExitedError, once the worker's exit is known. */
  async #translate(error: unknown): Promise<unknown> {
    if (!(error instanceof ConnectionClosedError) || error instanceof WorkerExitedError) {
      return error;
    }
    // A worker that is exiting closes its connection a moment before its exit is reported.
    if (!this.#closing && !await this.#exitsWithin(CONNECTION_LINGER_MS)) {
      // The connection failed (heartbeat, protocol error) while the worker lives: it is of
      // no use any more, and must not outlive its channel.
      this.#stopReason ??= error.message;
      this.#signal("SIGKILL");
    }
    return this.#exitError(await this.#status, error);
  }

  #exitError(status: Deno.CommandStatus, cause: unknown): WorkerExitedError {
    return new WorkerExitedError({
      worker: this.name,
      pid: this.pid,
      code: status.code,
      signal: status.signal,
      stderrTail: this.#stderr.tail,
      reason: status.signal !== null ? this.#stopReason : undefined,
    }, { cause });
  }
}

/** How long to wait for a worker to connect when no handshake timeout is given: 10 s. */
const DEFAULT_ACCEPT_TIMEOUT = 10_000;

/**
 * The channel's view of the worker's stdio: closing it stops the process gracefully
 * (`exitTimeout`, SIGTERM, `killTimeout`, SIGKILL) instead of the transport's own timeout.
 */
class StdioWorkerTransport implements Transport {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  readonly #inner: ChildTransport;
  readonly #process: ProcessControl;

  constructor(inner: ChildTransport, process: ProcessControl) {
    this.readable = inner.readable;
    this.writable = inner.writable;
    this.#inner = inner;
    this.#process = process;
  }

  async close(): Promise<void> {
    // The channel has closed `writable` (the worker's stdin) by now: the worker will exit.
    await this.#process.stop();
    await this.#inner.close();
  }

  async abort(reason?: unknown): Promise<void> {
    // The channel aborts when the worker's output ended (it is exiting: let it report its
    // own exit code) or when it failed the worker; a worker that lives on is stopped.
    await this.#process.stop();
    await this.#inner.abort(reason);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** The channel's view of the worker's socket: closing it also stops the process. */
class SocketWorkerTransport implements Transport {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  readonly #socket: Transport;
  readonly #process: ProcessControl;

  constructor(socket: Transport, process: ProcessControl) {
    this.readable = socket.readable;
    this.writable = socket.writable;
    this.#socket = socket;
    this.#process = process;
  }

  async close(): Promise<void> {
    await this.#socket.close();
    // The worker's stdin is its other lifeline: close it too.
    await this.#process.stdio.writable.close().catch(() => {});
    await this.#process.stop();
    await this.#process.stdio.close();
  }

  async abort(reason?: unknown): Promise<void> {
    await this.#socket.abort(reason);
    await this.#process.stdio.writable.close().catch(() => {});
    await this.#process.stop();
    await this.#process.stdio.abort(reason);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** A view of `child` whose stderr looks unpiped, so that childTransport leaves it to us. */
function withoutStderr(child: Deno.ChildProcess): Deno.ChildProcess {
  return {
    pid: child.pid,
    stdin: child.stdin,
    stdout: child.stdout,
    get stderr(): Deno.SubprocessReadableStream {
      throw new TypeError("The worker's stderr is read by its handle");
    },
    status: child.status,
    output: () => child.output(),
    kill: (signal?: Deno.Signal) => child.kill(signal),
    ref: () => child.ref(),
    unref: () => child.unref(),
    [Symbol.asyncDispose]: () => child[Symbol.asyncDispose](),
  };
}

async function closeSocket(socket: { dir: string; listener: Listener }): Promise<void> {
  await socket.listener.close();
  await Deno.remove(socket.dir, { recursive: true }).catch(() => {});
}

/** The `deno run` flags for `permissions`. */
function permissionFlags(permissions: WorkerPermissions): string[] {
  const flags: string[] = [];
  for (const [key, value] of Object.entries(permissions)) {
    if (value === undefined || value === false) continue;
    if (!PERMISSION_NAMES.has(key)) {
      throw new TypeError(`Unknown permission "${key}": expected one of ${[...PERMISSION_NAMES]}`);
    }
    if (value === true) {
      flags.push(`--allow-${key}`);
      continue;
    }
    const list = (value as readonly (string | URL)[]).map((item) =>
      item instanceof URL ? decodeURIComponent(item.pathname) : item
    );
    for (const item of list) {
      if (item.includes(",")) {
        throw new TypeError(`permissions.${key} entries cannot contain ",": got "${item}"`);
      }
    }
    // An empty list grants nothing, as `false` does; `--allow-x=` would grant everything.
    if (list.length > 0) flags.push(`--allow-${key}=${list.join(",")}`);
  }
  return flags;
}

const PERMISSION_NAMES = new Set(["read", "write", "net", "env", "run", "sys", "ffi", "import"]);

/** Adds `item` to a permission unless it already grants everything. */
function withGrant<T extends string | URL>(
  current: boolean | readonly T[] | undefined,
  item: T,
): boolean | readonly T[] {
  return current === true ? true : [...(Array.isArray(current) ? current : []), item];
}

function workerName(target: string | URL): string {
  const path = target instanceof URL ? decodeURIComponent(target.pathname) : target;
  return path.slice(path.lastIndexOf("/") + 1) || path;
}

function nonNegative(name: string, value: number): void {
  if (!(value >= 0)) throw new RangeError(`${name} must be a number >= 0, got ${value}`);
}

const encoder = new TextEncoder();

function writeStderr(text: string): void {
  const bytes = encoder.encode(text);
  let written = 0;
  try {
    while (written < bytes.length) written += Deno.stderr.writeSync(bytes.subarray(written));
  } catch {
    // Our stderr is gone: nowhere left to forward to.
  }
}
