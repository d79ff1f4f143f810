// A parent that spawns two workers, prints their pids as JSON, and waits to be killed. With
// the argument "hang" its second worker is stuck in a busy loop, so only the parent's signal
// handling (not stdin EOF) can end it.
import { spawnWorker } from "../spawn_worker.ts";
import type { EchoApi } from "./echo_worker.ts";

const url = new URL("./echo_worker.ts", import.meta.url);
const workers = await Promise.all([spawnWorker<EchoApi>(url), spawnWorker<EchoApi>(url)]);
if (Deno.args[0] === "hang") {
  workers[1].remote.hang(120_000).catch(() => {});
  await new Promise((resolve) => setTimeout(resolve, 100));
}
console.log(JSON.stringify(workers.map((worker) => worker.pid)));
setInterval(() => {}, 1000);
