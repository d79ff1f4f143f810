// The worker of the report's 100 MB stream (bench/report/_workers.ts): serves `chunks` with
// serveWorker's default options, as a user's worker module would, a fresh chunk per item as a
// producer reading a file would make.
import { serveWorker } from "@conduit/ipc/workers/serve";

const handlers = {
  /** `count` chunks of `bytes` bytes each, every byte of chunk `i` equal to `i & 0xff`. */
  async *chunks({ count, bytes }: { count: number; bytes: number }) {
    for (let i = 0; i < count; i++) yield new Uint8Array(bytes).fill(i & 0xff);
  },
};

/** The API of this worker. */
export type StreamApi = typeof handlers;

if (import.meta.main) await serveWorker(handlers);
