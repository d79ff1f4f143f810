// The reading end of a shared ring in a worker of its own, for a hostile peer that could
// hold up its thread: it reads once and posts what the read gave ("chunk <length>", "end", or
// "error <name>: <message>"), unless its thread is stuck.

/// <reference lib="deno.worker" />

import { type SharedRingEnd, sharedRingTransport } from "../shared_ring.ts";

self.onmessage = async (event: MessageEvent<SharedRingEnd>) => {
  const transport = sharedRingTransport(event.data, { spinMicros: 0 });
  const reader = transport.readable.getReader();
  try {
    const { value } = await reader.read();
    self.postMessage(value === undefined ? "end" : `chunk ${value.length}`);
  } catch (error) {
    self.postMessage(`error ${(error as Error).name}: ${(error as Error).message}`);
  }
  reader.releaseLock();
  await transport.close();
};
