// A worker for codecs/structured_worker_test.ts: echoes values and returns what cannot cross,
// over the structured codec.

import { structuredCodec } from "@conduit/ipc/codecs/structured";
import { serveWorker } from "@conduit/ipc/workers/serve";

const handlers = {
  echo: (value: unknown): unknown => value,
  /** A result holding a function: the worker's encode must refuse it. */
  withCallback: (): unknown => ({ items: [{ id: 1, callback: () => 1 }] }),
  /** Streams `count` chunks of `bytes` bytes, each filled with its index. */
  async *chunks({ count, bytes }: { count: number; bytes: number }): AsyncIterable<Uint8Array> {
    for (let i = 0; i < count; i++) yield new Uint8Array(bytes).fill(i);
  },
};

/** The worker's API. */
export type StructuredWorkerApi = typeof handlers;

if (import.meta.main) await serveWorker(handlers, { codec: structuredCodec({ stack: true }) });
