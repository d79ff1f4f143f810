/**
 * The Web Worker of examples/threads_channel.ts: serves a typed API over the transport its
 * first message names (`"postMessage"`, or a shared ring end).
 *
 * @module
 */

/// <reference lib="deno.worker" />

import { openChannel } from "@conduit/ipc/channel";
import { msgpackCodec } from "@conduit/ipc/codecs/msgpack";
import { type SharedRingEnd, sharedRingTransport } from "@conduit/ipc/transports/shared_ring";
import { selfTransport } from "@conduit/ipc/transports/web_worker";
import { THREAD_METHOD_CODECS, type ThreadApi } from "./_thread_api.ts";

const handlers: ThreadApi = {
  countPrimes(limit) {
    const composite = new Uint8Array(limit);
    let count = 0;
    for (let i = 2; i < limit; i++) {
      if (composite[i]) continue;
      count++;
      for (let j = i * i; j < limit; j += i) composite[j] = 1;
    }
    return count;
  },
  checksum(bytes) {
    let sum = 0;
    for (const byte of bytes) sum = (sum + byte) % 65_521;
    return sum;
  },
  async *countdown(from) {
    for (let i = from; i > 0; i--) yield i;
  },
};

self.onmessage = async (event: MessageEvent<"postMessage" | SharedRingEnd>) => {
  self.onmessage = null;
  const transport = event.data === "postMessage"
    ? selfTransport()
    : sharedRingTransport(event.data);
  const channel = await openChannel(transport, {
    codec: msgpackCodec(),
    methodCodecs: THREAD_METHOD_CODECS,
    handlers,
  });
  await channel.closed;
  self.close();
};
