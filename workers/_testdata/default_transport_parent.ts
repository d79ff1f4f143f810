// Spawns transport_worker.ts with default options and prints the transport it got, as the
// parent's own permissions allow (worker_defaults_test.ts runs it with several).
import { defaultWorkerTransport, spawnWorker } from "../spawn_worker.ts";
import type { TransportApi } from "./transport_worker.ts";

const worker = await spawnWorker<TransportApi>(new URL("./transport_worker.ts", import.meta.url));
console.log(JSON.stringify({
  chosen: defaultWorkerTransport(false),
  used: await worker.remote.transport(),
  code: (await worker.close()).code,
}));
