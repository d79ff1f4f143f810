// The stdout-safety preload for a worker module on Bun, which ignores a data: URL as
// `--preload` (Node takes `nodeQuietPreloadUrl`'s data: URL with `--import`; this file works
// there too): `bun --preload <this file> worker.ts`. See `nodeQuietStdout` in worker_env.ts.
import { REAL_STDOUT_KEY } from "../transports/_byte_channel_transport.ts";
import { consoleToStderr, nodeQuietStdout } from "./worker_env.ts";

nodeQuietStdout(REAL_STDOUT_KEY, consoleToStderr);
