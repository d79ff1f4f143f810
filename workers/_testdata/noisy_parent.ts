// Spawns the noisy worker with default options (its output prefixed on our stderr), makes it
// print, closes it and prints its pid on stdout. Needs only --allow-run.
import { spawnWorker } from "../spawn_worker.ts";
import type { NoisyApi } from "./noisy_worker.ts";

const worker = await spawnWorker<NoisyApi>(new URL("./noisy_worker.ts", import.meta.url), {
  args: ["--at-load"],
});
await worker.remote.print({ text: "from console", how: "console" });
await worker.close();
console.log(worker.pid);
