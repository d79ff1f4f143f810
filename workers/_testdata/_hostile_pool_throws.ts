// A worker module that throws as it loads, every time (a thread or a process in a crash loop).
import { serveWorker } from "../serve_worker.ts";

if (import.meta.main) {
  throw new Error("hostile: broken at start");
}
await serveWorker({});
