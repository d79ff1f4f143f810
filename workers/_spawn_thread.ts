// spawnWorker(module, { thread: true }): the module as a Web Worker, with the process
// worker's channel defaults; the options that only make sense for a process are refused.

import { DEFAULT_DRAIN_TIMEOUT } from "../channel/channel.ts";
import { defaultWorkerCodec } from "./_default_codec.ts";
import { moduleUrl, workerName } from "./_module_specifier.ts";
import { withWorkerDefaults } from "./_worker_channel.ts";
import { workerOptionsEnabled } from "./_worker_options_flag.ts";
import { ThreadPermissionsError } from "./errors.ts";
import type { SpawnWorkerOptions, WorkerCommand } from "./spawn_worker_options.ts";
import type { WorkerHandle } from "./worker_handle.ts";
import { threadPermissions } from "./worker_permissions.ts";

/** Options of a process worker that a thread has no use for. */
const PROCESS_ONLY = [
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
 * @throws {TypeError} For a command, a relative path or an option only a process takes.
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
