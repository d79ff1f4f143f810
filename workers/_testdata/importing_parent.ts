// A parent that imports a worker module as a value (not only its type): the worker module's
// top-level serveWorker() runs here, in the parent, and must refuse to serve.
import "./permission_worker.ts";

console.log("imported the worker module and went on");
