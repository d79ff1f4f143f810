// A worker that echoes every chunk it reads on a shared ring, spinning as it is told.

/// <reference lib="deno.worker" />

import { type SharedRingEnd, sharedRingTransport } from "../shared_ring.ts";

self.onmessage = (event: MessageEvent<{ end: SharedRingEnd; spinMicros: number }>) => {
  self.onmessage = null;
  const transport = sharedRingTransport(event.data.end, { spinMicros: event.data.spinMicros });
  void transport.readable.pipeTo(transport.writable).catch(() => {});
};
