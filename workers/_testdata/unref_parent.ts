// A parent that spawns a worker (or a pool, with "pool"), calls it once, unrefs it and does
// not close it: it must exit by itself. It prints the worker pids first, for the test. With
// "thread" the workers are threads (their pid is ours).
import type { EchoApi } from "./echo_worker.ts";
import { spawnWorker } from "../spawn_worker.ts";
import { WorkerPool } from "../worker_pool.ts";

const module = new URL("./echo_worker.ts", import.meta.url);
const options = Deno.args.includes("thread")
  ? { thread: true }
  : { transport: Deno.args.includes("unix") ? "unix" as const : "stdio" as const };
if (Deno.args.includes("pool")) {
  const pool = new WorkerPool<EchoApi>(module, { size: 2, concurrency: 2, ...options });
  const pids = await Promise.all([pool.remote.slowPid(50), pool.remote.slowPid(50)]);
  pool.unref();
  // A call made after unref() still keeps the program alive until it is answered.
  console.log(JSON.stringify([...new Set(pids), await pool.remote.echo("after")]));
} else {
  const worker = await spawnWorker<EchoApi>(module, options);
  worker.unref();
  console.log(JSON.stringify([await worker.remote.pid(), await worker.remote.slowPid(100)]));
}
