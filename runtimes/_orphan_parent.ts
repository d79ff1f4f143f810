// A parent for the cross-runtime no-orphan case: run by Deno, Node or Bun, it spawns the worker
// of _worker.ts under the runtime named in its first argument (at the path in its second),
// prints the worker's pid and waits to be killed.

import { spawnWorker, type WorkerRuntime } from "../workers/spawn_worker.ts";
import type { WorkerApi } from "./_worker.ts";

const [runtime, runtimePath] = (globalThis as unknown as { process: { argv: string[] } }).process
  .argv.slice(2);
const worker = await spawnWorker<WorkerApi>(new URL("./_worker.ts", import.meta.url), {
  runtime: runtime as WorkerRuntime,
  runtimePath,
  stdout: "discard",
  stderr: "discard",
});
await worker.remote.echo(1);
console.log(worker.pid);
setInterval(() => {}, 60_000);
