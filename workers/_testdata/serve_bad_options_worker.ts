// Calls serveWorker with an option it refuses, then lives on: the connection it had made must
// be let go at once, so that the parent's spawn fails then, not at its handshake timeout.
import { serveWorker } from "../serve_worker.ts";

const error = await serveWorker({}, { maxInFlight: 0 }).then(() => undefined, (e) => e);
console.error(`serveWorker refused: ${error?.name}`);
await new Promise((resolve) => setTimeout(resolve, 60_000));
