// Test helper: a parent that ends a thread worker stuck in a synchronous loop, then lets its
// program end on its own. Its argument says how: `kill`, `close` (drainTimeout ends the call),
// `load` (a module that spins as it loads: the handshake times out) or `pool` (a pool replaces
// a worker that ignores a cancel). With `hint`, it prints what a thread's permission error
// says; with `exit` (under Bun or Node), what a thread that called process.exit() ends with.
import { spawnWorker } from "../spawn_worker.ts";
import { WorkerPool } from "../worker_pool.ts";
import type { HostileApi } from "./_hostile_thread.ts";

const module = new URL("./_hostile_thread.ts", import.meta.url);
const how = "Deno" in globalThis
  ? Deno.args[0]
  : (globalThis as unknown as { process: { argv: string[] } }).process.argv[2];
const settled = (promise: Promise<unknown>) =>
  promise.then(() => "resolved", (error) => error.constructor.name);

if (how === "load") {
  const spawned = spawnWorker(module, {
    thread: true,
    name: "spin-at-load",
    handshakeTimeout: 200,
  });
  console.log(await settled(spawned));
} else if (how === "pool") {
  const pool = new WorkerPool<HostileApi>(module, { thread: true, size: 1, cancelGrace: 100 });
  const signal = AbortSignal.timeout(100);
  console.log(await settled(pool.remote.spin(undefined, { signal })));
  console.log(await pool.remote.echo("replaced"));
  await pool.close();
} else if (how === "exit") {
  // Run by Bun or Node: process.exit() in a thread ends the thread with that code.
  const worker = await spawnWorker<HostileApi>(module, { thread: true });
  const error = await worker.remote.processExit(4).catch((error) => error);
  const status = await worker.close();
  console.log(JSON.stringify([error.code, status.code, status.success]));
} else if (how === "hint") {
  // Run without --allow-env: the thread has this process's permissions, so lacks it too.
  await using worker = await spawnWorker<HostileApi>(module, { thread: true });
  console.log(await worker.remote.env("HOME").catch((error) => error.message));
} else {
  const worker = await spawnWorker<HostileApi>(module, { thread: true, drainTimeout: 200 });
  const spinning = settled(worker.remote.spin());
  // Long enough for the call to reach the thread, which then takes no other message.
  await new Promise((resolve) => setTimeout(resolve, 100));
  const status = how === "kill" ? await worker.kill() : await worker.close();
  console.log(status.code, await spinning);
}
