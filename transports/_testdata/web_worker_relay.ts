// A worker that joins its parent's transport (over `self`) to a MessagePort transport it is
// sent first: the conformance suite then has both ends of a real cross-thread pair in the
// test's thread, the bytes crossing into this worker and back.

/// <reference lib="deno.worker" />

import { messagePortTransport, selfTransport } from "../web_worker.ts";

self.onmessage = (event: MessageEvent) => {
  self.onmessage = null;
  const up = selfTransport();
  const down = messagePortTransport(event.data as MessagePort);
  void up.readable.pipeTo(down.writable).catch(() => {});
  void down.readable.pipeTo(up.writable).catch(() => {});
};
