// Says which transport its parent gave it: a Unix socket (CONDUIT_WORKER_SOCKET is set) or stdio.
import { serveWorker } from "../serve_worker.ts";
import { WORKER_SOCKET_ENV } from "../worker_env.ts";
import { envVar } from "../../_runtime.ts";

const handlers = { transport: () => envVar(WORKER_SOCKET_ENV) ? "unix" : "stdio" };
export type TransportApi = typeof handlers;
serveWorker(handlers);
