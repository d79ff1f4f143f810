// A parent for workers/process_hostile_test.ts: one spawn fails or runs with its own PATH
// (first argument: "cwd" or "path"), then a worker busy in a 120 s loop is started; its pid
// is printed as JSON, and the parent waits to be killed.
import { spawnWorker } from "../spawn_worker.ts";
import type { EchoApi } from "./echo_worker.ts";

const url = new URL("./echo_worker.ts", import.meta.url);
if (Deno.args[0] === "cwd") {
  await spawnWorker(url, { cwd: "/nonexistent/conduit-attack" }).then(
    (worker) => worker.kill(),
    (error) => console.error(`refused as expected: ${error}`),
  );
} else {
  const worker = await spawnWorker<EchoApi>(url, { env: { PATH: "/nonexistent" } });
  await worker.close();
}
const busy = await spawnWorker<EchoApi>(url);
busy.remote.hang(120_000).catch(() => {});
await new Promise((resolve) => setTimeout(resolve, 100));
console.log(JSON.stringify(busy.pid));
setInterval(() => {}, 1000);
