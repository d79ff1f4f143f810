// Calls serveWorker twice: the second call must fail, and the first channel serve on.
import { serveWorker } from "../serve_worker.ts";

let second = "pending";
const first = serveWorker({ second: () => second });
second = await serveWorker({}).then(
  () => "served again",
  (error) => `${error.name}: ${error.message}`,
);
await first;
