// The worker of bench/threads_layers.ts: echoes what it gets, by raw postMessage or through a
// transport (its readable piped to its writable), as its first message says (`{ spinMicros }`:
// the Web Worker transport with that spin).

/// <reference lib="deno.worker" />

import { type SharedRingEnd, sharedRingTransport } from "../transports/shared_ring.ts";
import { selfTransport } from "../transports/web_worker.ts";

self.onmessage = (
  event: MessageEvent<"raw" | "web worker" | { spinMicros: number } | SharedRingEnd>,
) => {
  const first = event.data;
  if (first === "raw") {
    self.onmessage = (message: MessageEvent) => self.postMessage(message.data);
    return;
  }
  self.onmessage = null;
  const transport = first === "web worker"
    ? selfTransport()
    : "spinMicros" in first
    ? selfTransport({ spinMicros: first.spinMicros })
    : sharedRingTransport(first);
  void transport.readable.pipeTo(transport.writable).catch(() => {});
};
