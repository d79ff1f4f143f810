// spawnWorker(module, { thread: true }): the module as a Web Worker, with the process
// worker's channel defaults; the options that only make sense for a process are refused.

import { DEFAULT_DRAIN_TIMEOUT } from "../channel/channel.ts";
import { runtimeName } from "../_runtime.ts";
import {
  defaultWorkerCodec,
  moduleUrl,
  type SpawnWorkerOptions,
  threadPermissions,
  type WorkerCommand,
  workerName,
} from "./spawn_worker_options.ts";
import { withWorkerDefaults } from "./_worker_channel.ts";
import { ThreadPermissionsError } from "./errors.ts";
import type { WorkerHandle } from "./worker_handle.ts";

/** Options of a process worker that a thread has no use for. */
const PROCESS_ONLY = [
  "runtime",
  "runtimePath",
  "runtimeArgs",
  "denoArgs",
  "args",
  "cwd",
  "env",
  "clearEnv",
  "transport",
  "stderr",
  "stdout",
  "stderrTailLines",
  "exitTimeout",
  "killTimeout",
] as const;

/** A thread worker's module URL, name and permissions, once its options are checked. */
export interface ThreadStart {
  module: URL;
  name: string;
  permissions: Deno.PermissionOptionsObject | undefined;
}

/**
 * Checks `options` for a thread worker of `worker`.
 *
 * @throws {TypeError} For a command, a relative path or an option only a process takes; for
 * `permissions` on Node and Bun.
 * @throws {ThreadPermissionsError} For `permissions` without Deno's worker-options feature.
 */
export function checkThreadOptions(
  worker: string | URL | WorkerCommand,
  options: SpawnWorkerOptions<object>,
): ThreadStart {
  if (typeof worker !== "string" && !(worker instanceof URL)) {
    throw new TypeError(
      `thread: true runs a Deno module as a Web Worker, not a command (${worker.command})`,
    );
  }
  const runtime = runtimeName();
  const module = moduleUrl(worker);
  const given = PROCESS_ONLY.filter((key) => options[key] !== undefined);
  if (given.length > 0) {
    throw new TypeError(
      `${given.join(", ")} cannot be used with thread: true: ${
        given.length > 1 ? "they are" : "it is"
      } for a worker process`,
    );
  }
  const name = options.name ?? workerName(worker);
  if (options.permissions === undefined) return { module, name, permissions: undefined };
  if (runtime !== "deno") {
    throw new TypeError(
      `permissions cannot be used with thread: true on ${runtime}: a ${runtime} thread has its ` +
        "process's access (only Deno gives a thread permissions of its own)",
    );
  }
  // Checked first: a permission list that is wrong is wrong with the flag too.
  const permissions = threadPermissions(options.permissions);
  const enabled = options.unstableWorkerOptions ?? workerOptionsEnabled();
  if (!enabled) throw new ThreadPermissionsError(name);
  return { module, name, permissions };
}

/** Starts `worker` as a thread worker and opens its channel. */
export async function spawnThread<Api extends object, Local extends object>(
  worker: string | URL | WorkerCommand,
  options: SpawnWorkerOptions<Local>,
): Promise<WorkerHandle<Api>> {
  const start = checkThreadOptions(worker, options as SpawnWorkerOptions<object>);
  const {
    thread: _,
    permissions: _permissions,
    unstableWorkerOptions: _unstable,
    name: _name,
    codec: givenCodec,
    drainTimeout = DEFAULT_DRAIN_TIMEOUT,
    ...channelOptions
  } = options;
  // The default codec and the thread's side of things (with the Web Worker transport) load
  // with the first thread a program spawns, before the thread starts: its first messages
  // must find the channel listening.
  const [codec, { WorkerThread }] = await Promise.all([
    givenCodec ?? defaultWorkerCodec(),
    import("./_worker_thread.ts"),
  ]);
  const handle = new WorkerThread<Api>(start.module, start);
  return await handle.open(withWorkerDefaults({ ...channelOptions, drainTimeout, codec }));
}

// Whether Deno's `worker-options` feature is on, which `deno.permissions` in a Worker's options
// needs: without it Deno prints a warning and exits the whole process (code 70) as the Worker
// is constructed, so this must be known before. Deno shows its feature list to no JavaScript
// API (deno 2.9: only its node:child_process polyfill reads it, through a private op), so we
// read what turned it on: the command line (`--unstable-worker-options`), or the `unstable`
// list of the config file Deno used (`--config <file>`, else the nearest deno.json or
// deno.jsonc from the working directory up, unless `--no-config`). Deno lets a program read
// its own /proc/self/cmdline only with every permission (`-A`), so elsewhere the answer is
// "not known to be on", never a guess: the caller can say so (`unstableWorkerOptions`).
const FLAG = "--unstable-worker-options";
const FEATURE = "worker-options";

/** Whether the worker-options feature is known to be on in this process. */
export function workerOptionsEnabled(): boolean {
  if (Deno.build.standalone) return false;
  const args = commandLine();
  if (args === undefined) return false;
  if (args.includes(FLAG)) return true;
  if (args.includes("--no-config")) return false;
  const config = configPath(args);
  return config !== undefined && unstableFeatures(config).includes(FEATURE);
}

/** Deno's arguments to this process, if Linux shows them and we may read them (`-A`). */
function commandLine(): string[] | undefined {
  const text = readIfGranted("/proc/self/cmdline");
  if (text === undefined) return undefined;
  const args = text.split("\0");
  // Deno's own flags come before the script (after the subcommand, if there is one); what
  // follows the script is the script's.
  const first = SUBCOMMANDS.has(args[1]) ? 2 : 1;
  const script = args.findIndex((arg, i) =>
    i >= first && !arg.startsWith("-") && !TAKES_VALUE.has(args[i - 1])
  );
  return script < 0 ? args : args.slice(0, script);
}

const SUBCOMMANDS = new Set(["run", "test", "bench", "serve", "eval", "repl", "task", "jupyter"]);
/** Deno options whose value may follow as the next argument (`--config deno.json`). */
const TAKES_VALUE = new Set([
  "--config",
  "-c",
  "--import-map",
  "--lock",
  "--location",
  "--cert",
  "--seed",
  "--ext",
]);

/** The config file Deno uses: `--config`'s, else the nearest one from the working directory. */
function configPath(args: string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--config" || arg === "-c") return args[i + 1];
    if (arg.startsWith("--config=")) return arg.slice("--config=".length);
  }
  let dir: string;
  try {
    dir = Deno.cwd();
  } catch {
    return undefined;
  }
  for (;;) {
    for (const name of ["deno.json", "deno.jsonc"]) {
      const path = `${dir}/${name}`;
      if (readIfGranted(path) !== undefined) return path;
    }
    const parent = dir.slice(0, dir.lastIndexOf("/")) || "/";
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** The `unstable` list of a JSON or JSONC config file (empty when unreadable). */
function unstableFeatures(path: string): string[] {
  const text = readIfGranted(path);
  if (text === undefined) return [];
  try {
    const unstable = JSON.parse(withoutComments(text)).unstable;
    return Array.isArray(unstable) ? unstable.map(String) : [];
  } catch {
    return [];
  }
}

/** JSONC as JSON: comments and trailing commas dropped, strings left alone. */
function withoutComments(text: string): string {
  return text.replace(
    /("(?:\\.|[^"\\])*")|\/\/[^\n]*|\/\*[\s\S]*?\*\/|,(\s*[}\]])/g,
    (_, string, closing) => string ?? closing ?? "",
  );
}

function readIfGranted(path: string): string | undefined {
  try {
    if (Deno.permissions.querySync({ name: "read", path }).state !== "granted") return undefined;
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}
