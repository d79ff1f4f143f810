/**
 * The README's first quickstart: spawn a typed worker, call it, read a stream from it, and
 * cancel a call with an AbortSignal.
 *
 *   deno run --allow-run examples/quickstart_worker.ts
 *
 * @module
 */

import { spawnWorker } from "@conduit/ipc/workers";
import type { HashApi } from "./_hash_worker.ts";

await using worker = await spawnWorker<HashApi>(new URL("./_hash_worker.ts", import.meta.url));
console.log(await worker.remote.sha256("hello")); // typed: Promise<string>
for await (const n of worker.remote.countdown(3)) console.log(n); // 3, 2, 1

const controller = new AbortController();
const call = worker.remote.sha256("x".repeat(1e6), { signal: controller.signal });
controller.abort(new Error("changed my mind"));
await call.catch((error) => console.log("aborted:", error.message));
