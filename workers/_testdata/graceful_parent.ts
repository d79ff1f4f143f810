// An application that handles SIGTERM itself: it prints {"pid"} once its worker is busy
// with a call, and on SIGTERM prints {"signal": n}, waits for that call, prints its
// {"result"} and exits — by closing the worker first, or with the argument "exit" by
// Deno.exit() while a second call keeps the worker busy in synchronous code.
import { spawnWorker } from "../spawn_worker.ts";
import type { EchoApi } from "./echo_worker.ts";

const worker = await spawnWorker<EchoApi>(new URL("./echo_worker.ts", import.meta.url));
const exitAtOnce = Deno.args[0] === "exit";
const inFlight = worker.remote.sleep(400);
if (exitAtOnce) worker.remote.hang(120_000).catch(() => {});
let signals = 0;
Deno.addSignalListener("SIGTERM", async () => {
  signals++;
  console.log(JSON.stringify({ signal: signals }));
  if (exitAtOnce) Deno.exit(0);
  console.log(JSON.stringify({ result: await inFlight }));
  await worker.close();
  Deno.exit(0);
});
console.log(JSON.stringify({ pid: worker.pid }));
