// Calls serveWorker while its parent's socket cannot be reached, then again once it can: the
// failed call made no channel, so the retry must serve.
import { serveWorker, WORKER_SOCKET_ENV } from "../serve_worker.ts";

const socket = Deno.env.get(WORKER_SOCKET_ENV)!;
Deno.env.set(WORKER_SOCKET_ENV, `${socket}.missing`);
const first = await serveWorker({}).then(() => "served", (error) => error.name);
Deno.env.set(WORKER_SOCKET_ENV, socket);
await serveWorker({ first: () => first });
