// Spawns transport_worker.ts with default options (or the transport named by its argument) and
// prints the transport it got, as the parent's own permissions allow, or the spawn's error
// (worker_defaults_test.ts runs it with several).
import { defaultWorkerTransport, spawnWorker } from "../spawn_worker.ts";
import type { TransportApi } from "./transport_worker.ts";

const transport = Deno.args[0] as "unix" | "stdio" | undefined;
const worker = await spawnWorker<TransportApi>(
  new URL("./transport_worker.ts", import.meta.url),
  { transport },
).catch((error: Error) => {
  console.log(JSON.stringify({ error: `${error.name}: ${error.message}` }));
  Deno.exit(0);
});
console.log(JSON.stringify({
  chosen: defaultWorkerTransport(false),
  used: await worker.remote.transport(),
  code: (await worker.close()).code,
}));
