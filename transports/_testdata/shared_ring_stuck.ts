// A worker whose shared ring transport never reads: the peer of the dies-mid-write case.

/// <reference lib="deno.worker" />

import { type SharedRingEnd, sharedRingTransport } from "../shared_ring.ts";

self.onmessage = (event: MessageEvent<SharedRingEnd>) => {
  sharedRingTransport(event.data);
};
