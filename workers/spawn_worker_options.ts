// The options of spawnWorker and their defaults, apart from the function so that the thread
// path (_spawn_thread.ts) can read them without importing spawnWorker back.

import type { ChannelOptions } from "../channel/channel.ts";
import type { Codec } from "../codecs/types.ts";
import { WORKER_ENV, WORKER_SOCKET_ENV } from "./worker_env.ts";
import { onDeno, pathToFileUrl, runtimeOs } from "../_runtime.ts";

/** The default {@linkcode SpawnWorkerOptions.exitTimeout}: 1 s. */
export const DEFAULT_EXIT_TIMEOUT = 1_000;
/** The default {@linkcode SpawnWorkerOptions.killTimeout}: 1 s. */
export const DEFAULT_KILL_TIMEOUT = 1_000;
/** The default {@linkcode SpawnWorkerOptions.stderrTailLines}: 20 lines. */
export const DEFAULT_STDERR_TAIL_LINES = 20;
/**
 * The default {@linkcode SpawnWorkerOptions.transport} of a worker module: `"unix"`, where this
 * process may make the worker's socket (see {@linkcode defaultWorkerTransport}).
 */
export const DEFAULT_WORKER_TRANSPORT: WorkerTransportKind = "unix";
/** Where a worker's socket is made: a fresh owner-only directory under this one. */
export const WORKER_SOCKET_PARENT = "/tmp";
/**
 * The V8 flags a Deno worker starts with unless its `denoArgs` give a `--v8-flags` of their
 * own: a young generation of 4 MiB from the start (V8 starts at 1 MiB), which a worker's start
 * fills: with the default, two scavenges run as it loads and answers its first call, and
 * promote what they copy anyway (`bench/ab_engine.ts` case `spawn`; `--v8-flags=--trace-gc`
 * shows them). V8 grows the young generation from there as it would.
 *
 * @example
 * ```ts
 * import { DEFAULT_WORKER_V8_FLAGS } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(DEFAULT_WORKER_V8_FLAGS, ["--min-semi-space-size=4"]);
 * ```
 */
export const DEFAULT_WORKER_V8_FLAGS: readonly string[] = ["--min-semi-space-size=4"];

/**
 * The transport a worker gets when its options name none: {@linkcode DEFAULT_WORKER_TRANSPORT}
 * (`"unix"`) for a worker module, where this process may make its socket: on Linux and macOS,
 * and, on Deno, with read, write and net permission for a socket under
 * {@linkcode WORKER_SOCKET_PARENT} (`--allow-read=/tmp --allow-write=/tmp --allow-net`, or `-A`). Otherwise,
 * and for a {@linkcode WorkerCommand} (which may speak only stdio), `"stdio"`. A Unix socket
 * carries calls faster than the worker's stdio (the report's Node peers rows, conduit default
 * against conduit stdio); it costs the worker nothing in permissions but its own socket's path.
 *
 * @param command Whether the worker is a {@linkcode WorkerCommand}.
 * @returns The transport.
 *
 * @example
 * ```ts
 * import { defaultWorkerTransport } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * assert.equal(defaultWorkerTransport(true), "stdio");
 * assert.ok(["unix", "stdio"].includes(defaultWorkerTransport(false)));
 * ```
 */
export function defaultWorkerTransport(command: boolean): WorkerTransportKind {
  if (command || runtimeOs() === "windows") return "stdio";
  if (!onDeno()) return DEFAULT_WORKER_TRANSPORT;
  const { permissions } = Deno;
  const granted = (descriptor: Deno.PermissionDescriptor) =>
    permissions.querySync(descriptor).state === "granted";
  const path = WORKER_SOCKET_PARENT;
  return granted({ name: "read", path }) && granted({ name: "write", path }) &&
      granted({ name: "net", host: `unix:${path}/cdw/w.sock` })
    ? DEFAULT_WORKER_TRANSPORT
    : "stdio";
}

/**
 * The transport between parent and worker: the worker's stdin/stdout, or a Unix socket
 * (stdin stays piped then, so the worker still notices when the parent is gone).
 */
export type WorkerTransportKind = "stdio" | "unix";

/**
 * The runtime that runs a worker module: Deno (`deno run`, with only the `permissions` given),
 * Node (>= 22, which strips the module's types) or Bun.
 */
export type WorkerRuntime = "deno" | "node" | "bun";

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
   * The runtime that runs the worker module; see {@linkcode WorkerRuntime}. A Node or Bun worker
   * runs with this process's user's rights: `permissions` and `denoArgs` are Deno's and are a
   * `TypeError` with it (Node's own `--permission` flags go in `runtimeArgs`). Its module is a
   * local file (a `file:` URL or an absolute path), and imports conduit as that runtime resolves
   * it (a relative path into a checkout, or the installed package).
   *
   * @default this process's runtime
   */
  runtime?: WorkerRuntime;
  /**
   * The executable of `runtime`.
   *
   * @default this process's executable when `runtime` is this process's runtime; else
   * `runtime`'s name, looked up in `PATH`
   */
  runtimePath?: string;
  /**
   * More flags for `node` or `bun`, before the module (e.g. Node's `--permission` and
   * `--allow-fs-read=…`). For a Deno worker use `denoArgs`.
   *
   * @default {[]}
   */
  runtimeArgs?: readonly string[];
  /**
   * More flags for `deno run`, before the module (e.g. `--v8-flags=--max-old-space-size=256`,
   * `--config=deno.json`). Ignored for a {@linkcode WorkerCommand}. Without a `--v8-flags` of
   * yours, a Deno worker starts with {@linkcode DEFAULT_WORKER_V8_FLAGS}; with one, with yours
   * only (add those to it to keep them).
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
   * @default {defaultWorkerTransport} ("unix" for a module where this process may make its
   * socket, else "stdio")
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

// What a worker module may do: {@linkcode WorkerPermissions}, turned into `deno run` flags.
//
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

/** The `deno run` flags for `permissions`. */
export function permissionFlags(permissions: WorkerPermissions): string[] {
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
    if (!Array.isArray(value)) {
      throw new TypeError(
        `permissions.${key} must be true, false or an array, got ${typeof value}`,
      );
    }
    const list = (value as readonly (string | URL)[]).map((item) => {
      if (typeof item !== "string" && !(item instanceof URL)) {
        throw new TypeError(
          `permissions.${key} entries must be strings or URLs, got ${typeof item}`,
        );
      }
      // Only a file: URL names a local path: another's pathname would grant an unrelated one.
      if (item instanceof URL && item.protocol !== "file:") {
        throw new TypeError(`permissions.${key} URLs must be file: URLs, got ${item.href}`);
      }
      return item instanceof URL ? decodeURIComponent(item.pathname) : item;
    });
    for (const item of list) {
      if (item === "") throw new TypeError(`permissions.${key} entries cannot be empty`);
      if (item.includes(",")) {
        throw new TypeError(`permissions.${key} entries cannot contain ",": got "${item}"`);
      }
    }
    // An empty list grants nothing, as `false` does (Deno refuses an empty `--allow-x=`).
    if (list.length > 0) flags.push(`--allow-${key}=${list.join(",")}`);
  }
  return flags;
}

const PERMISSION_NAMES = new Set(["read", "write", "net", "env", "run", "sys", "ffi", "import"]);

/**
 * `permissions`, checked as the caller gave them (a `TypeError` for what no flag can say),
 * plus reading the variable that tells the worker it is one.
 */
export function withWorkerEnvGrant(permissions: WorkerPermissions): WorkerPermissions {
  permissionFlags(permissions);
  return { ...permissions, env: withGrant(permissions.env, WORKER_ENV) };
}

/**
 * `permissions` plus what connecting to the Unix socket at `path` takes (Deno checks read,
 * write and net) and reading the variable that names it.
 */
export function withSocketGrants(
  permissions: WorkerPermissions,
  path: string,
): WorkerPermissions {
  return {
    ...permissions,
    read: withGrant(permissions.read, path),
    write: withGrant(permissions.write, path),
    net: withGrant(permissions.net, `unix:${path}`),
    env: withGrant(permissions.env, WORKER_SOCKET_ENV),
  };
}

/** Adds `item` to a permission unless it already grants everything. */
function withGrant<T extends string | URL>(
  current: boolean | readonly T[] | undefined,
  item: T,
): boolean | readonly T[] {
  return current === true ? true : [...(Array.isArray(current) ? current : []), item];
}

/**
 * `permissions` as a Web Worker's `deno.permissions`: every permission named, the ones not
 * granted as `false`, so a thread gets no more than a process would.
 */
export function threadPermissions(permissions: WorkerPermissions): Deno.PermissionOptionsObject {
  permissionFlags(permissions); // The same checks: known names, no "," in a list entry.
  const result: Record<string, boolean | (string | URL)[]> = {};
  for (const name of PERMISSION_NAMES) {
    const value = permissions[name as keyof WorkerPermissions];
    result[name] = value === true
      ? true
      : Array.isArray(value) && value.length > 0
      ? [...value]
      : false;
  }
  return result as Deno.PermissionOptionsObject;
}

// The worker module spawnWorker runs. A relative string ("./w.ts") would resolve against the
// working directory, not against the module that wrote it as `import` does; the calling
// module's URL cannot be known reliably (a stack trace is not, and a WorkerPool spawns long
// after its caller returned), so a relative string is refused with the fix in the message.
/** Whether `path` is absolute, on POSIX or Windows. */
const ABSOLUTE = /^(?:\/|[A-Za-z]:[\\/]|\\\\)/;
/** A URL scheme (two letters at least, so that `C:` stays a drive). */
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]+:/;

/**
 * The specifier `deno run` gets for `module`: a URL's `href`, an absolute path or a URL string
 * as given.
 *
 * @throws {TypeError} When `module` is a relative path.
 */
export function moduleSpecifier(module: string | URL): string {
  if (module instanceof URL) return module.href;
  if (typeof module !== "string" || module === "") {
    throw new TypeError(`The worker module must be a URL or a path, got ${String(module)}`);
  }
  if (ABSOLUTE.test(module) || SCHEME.test(module)) return module;
  throw new TypeError(
    `The worker module "${module}" is a relative path: it would resolve against the working ` +
      `directory, not against your module as an import does. Pass ` +
      `new URL(${JSON.stringify(module.startsWith(".") ? module : `./${module}`)}, ` +
      `import.meta.url), or an absolute path`,
  );
}

/** `module` as a URL, for `new Worker()`: an absolute path becomes a `file:` URL. */
export function moduleUrl(module: string | URL): URL {
  const specifier = moduleSpecifier(module);
  return SCHEME.test(specifier) ? new URL(specifier) : pathToFileUrl(specifier);
}

/** A worker's default name: its module's file name, or its command's. */
export function workerName(target: string | URL): string {
  if (/^(?:data|blob):/.test(String(target))) return "inline module";
  const path = target instanceof URL ? decodeURIComponent(target.pathname) : target;
  return path.slice(path.lastIndexOf("/") + 1) || path;
}

// The codec a parent speaks to a worker module by default, loaded on first use: the structured
// codec brings conduit's MessagePack modules, which a program that imports `@conduit/ipc` and never spawns
// such a worker should not load.
/** The structured codec, once its module has loaded. */
export async function defaultWorkerCodec(): Promise<Codec<unknown>> {
  const { structuredCodec } = await import("../codecs/structured.ts");
  return structuredCodec();
}

// Deno says which flag a denied operation needs ("Requires read access to "/data/x", run
// again with the --allow-read flag"), but a worker's permissions come from spawnWorker's
// `permissions` option: translate the one into the other, for the errors the parent sees.
const DENIED = /Requires (\w+) access to "([^"]*)"/;
/** What a hint starts with, so that it is added once. */
const HINT_START = "grant it to the worker with spawnWorker(";

/**
 * The `spawnWorker` option that grants what `text` (an error message or a stderr line) says
 * was denied, as a sentence; `undefined` when `text` reports no denied permission.
 */
export function permissionHint(text: string): string | undefined {
  const match = DENIED.exec(text);
  if (match === null) return undefined;
  const [, kind, target] = match;
  // Deno asks for "all" access for some special files: no key of `permissions` grants that.
  if (!PERMISSION_NAMES.has(kind)) return undefined;
  const grant = target === "" ? "true" : `[${JSON.stringify(target)}]`;
  return `${HINT_START}module, { permissions: { ${kind}: ${grant} } })`;
}

/** Adds the hint to a permission error's message (once); any other error is left alone. */
export function withPermissionHint(error: unknown): unknown {
  if (!(error instanceof Error) || error.message.includes(HINT_START)) return error;
  const hint = permissionHint(error.message);
  if (hint !== undefined) error.message += `: ${hint}`;
  return error;
}
