// A worker that reads the file named by its first argument before it serves: without the
// read permission it dies of NotCapable before the handshake.
import { serveWorker } from "../serve_worker.ts";

const text = await Deno.readTextFile(Deno.args[0]);
await serveWorker({ length: (): number => text.length });
