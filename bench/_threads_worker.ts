// The conduit side of bench/threads_bench.ts: a worker serving echo and take over the Web
// Worker transport or a shared ring, as its first message says.

/// <reference lib="deno.worker" />

import { type Channel, openChannel } from "../channel/mod.ts";
import type { Transport } from "../transports/types.ts";
import { type SharedRingEnd, sharedRingTransport } from "../transports/shared_ring.ts";
import { selfTransport } from "../transports/web_worker.ts";
import { THREAD_CHANNEL_OPTIONS } from "./_threads_peers.ts";

self.onmessage = async (event: MessageEvent<{ kind: "worker" | "ring"; end?: SharedRingEnd }>) => {
  self.onmessage = null;
  const transport: Transport = event.data.kind === "ring"
    ? sharedRingTransport(event.data.end!)
    : selfTransport();
  const channel: Channel<object> = await openChannel(transport, {
    ...THREAD_CHANNEL_OPTIONS,
    handlers: {
      echo: (value: unknown) => value,
      take: (bytes: Uint8Array) => {
        const length = bytes.byteLength;
        // Done with the bytes: the next 1 MiB frame is read into their memory.
        channel.recycle(bytes);
        return length;
      },
    },
  });
  await channel.closed;
};
