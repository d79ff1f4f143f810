// A worker that does not exit after its channel closes (a leftover timer keeps it alive):
// `close()` must escalate. With the argument "ignore-term" it also ignores SIGTERM.
import { serveWorker } from "../serve_worker.ts";

if (Deno.args[0] === "ignore-term") {
  Deno.addSignalListener("SIGTERM", () => console.error("ignoring SIGTERM"));
}
setInterval(() => {}, 1000);
await serveWorker({ ping: () => "pong" }, { exit: false });
