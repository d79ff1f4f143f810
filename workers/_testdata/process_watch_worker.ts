// Records whether anything reads `globalThis.process` while serveWorker starts: on Deno that
// read starts Deno's Node layer, which would cost every worker's start-up (see
// nodeQuietStdout in worker_env.ts). The getter is replaced before conduit loads.
const descriptor = Object.getOwnPropertyDescriptor(globalThis, "process");
let reads = 0;
if (descriptor?.get !== undefined) {
  const get = descriptor.get;
  Object.defineProperty(globalThis, "process", {
    ...descriptor,
    get() {
      reads++;
      return get.call(this);
    },
  });
}
const { serveWorker } = await import("../serve_worker.ts");

const handlers = {
  /** How many times `globalThis.process` was read, and whether it could be watched. */
  processReads: () => ({ reads, watched: descriptor?.get !== undefined }),
};
export type ProcessWatchApi = typeof handlers;
await serveWorker(handlers);
