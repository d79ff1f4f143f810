// The comlink side of bench/threads_bench.ts: the same service as bench/_threads_worker.ts,
// exposed with comlink (structured clone for values, transfer for buffers).

/// <reference lib="deno.worker" />

import * as Comlink from "comlink";

Comlink.expose({
  echo: (value: unknown) => value,
  take: (bytes: Uint8Array) => bytes.byteLength,
});
