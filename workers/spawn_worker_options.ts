// The options of spawnWorker and their defaults, apart from the function so that the thread
// path (_spawn_thread.ts) can read them without importing spawnWorker back.

import type { ChannelOptions } from "../channel/channel.ts";
import type { Codec } from "../codecs/types.ts";
import type { WorkerPermissions } from "./worker_permissions.ts";

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
