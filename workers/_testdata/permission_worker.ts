// A worker that tries to read a file: allowed only when the parent granted it.
import { serveWorker } from "../serve_worker.ts";

await serveWorker({ read: (path: string) => Deno.readTextFile(path) });
