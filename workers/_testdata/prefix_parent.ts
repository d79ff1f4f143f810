// Spawns the echo worker with the default stderr handling (prefixed lines on our stderr),
// makes it print, prints its pid on stdout and closes it.
import { spawnWorker } from "../spawn_worker.ts";
import type { EchoApi } from "./echo_worker.ts";

const worker = await spawnWorker<EchoApi>(new URL("./echo_worker.ts", import.meta.url));
await worker.remote.chatty();
await worker.close();
console.log(worker.pid);
