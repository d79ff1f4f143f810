// A program for the thread cases (_thread_cases.ts): a thread worker, one call, then
// `unref()` and no close. It must end by itself, on every runtime (holdThread, _thread.ts).

import { spawnWorker } from "../workers/spawn_worker.ts";
import type { WorkerApi } from "./_worker.ts";

const worker = await spawnWorker<WorkerApi>(new URL("./_worker.ts", import.meta.url), {
  thread: true,
});
console.log(await worker.remote.echo("unref'd"));
worker.unref();
