// A worker that joins two shared rings: the conformance suite then has both ends of a real
// cross-thread pair in the test's thread.

/// <reference lib="deno.worker" />

import { type SharedRingEnd, sharedRingTransport } from "../shared_ring.ts";

self.onmessage = (event: MessageEvent<{ up: SharedRingEnd; down: SharedRingEnd }>) => {
  self.onmessage = null;
  const up = sharedRingTransport(event.data.up);
  const down = sharedRingTransport(event.data.down);
  void up.readable.pipeTo(down.writable).catch(() => {});
  void down.readable.pipeTo(up.writable).catch(() => {});
};
