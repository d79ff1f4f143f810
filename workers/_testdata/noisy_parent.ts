// Spawns the noisy worker with default options (its output prefixed on our stderr), makes it
// print, closes it and prints its pid on stdout. Needs only --allow-run. With the argument
// "crash" the worker throws at load, and the spawn's rejection goes uncaught.
import { spawnWorker } from "../spawn_worker.ts";
import type { NoisyApi } from "./noisy_worker.ts";

const worker = await spawnWorker<NoisyApi>(new URL("./noisy_worker.ts", import.meta.url), {
  args: Deno.args[0] === "crash" ? ["--crash-at-load"] : ["--at-load"],
});
await worker.remote.print({ text: "from console", how: "console" });
await worker.close();
console.log(worker.pid);
