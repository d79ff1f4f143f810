// A thread for the shared ring case (_thread_cases.ts): it takes a ring end from its parent's
// first message, serves `echo` and `count` over it with a channel, and closes itself after.

import { openChannel } from "../channel/mod.ts";
import { structuredCodec } from "../codecs/structured.ts";
import { type SharedRingEnd, sharedRingTransport } from "../transports/shared_ring.ts";
import { exitThread, threadScope } from "../_thread.ts";

const scope = threadScope();
const first = Promise.withResolvers<SharedRingEnd>();
const onMessage = (event: MessageEvent) => first.resolve(event.data as SharedRingEnd);
scope.addEventListener("message", onMessage);
const end = await first.promise;
scope.removeEventListener("message", onMessage);
const handlers = {
  echo: (value: unknown): unknown => value,
  async *count(to: number): AsyncIterable<number> {
    for (let i = 1; i <= to; i++) yield i;
  },
};
/** What the parent calls. */
export type RingApi = typeof handlers;

const channel = await openChannel(sharedRingTransport(end), {
  codec: structuredCodec(),
  handlers,
});
await channel.closed;
const close = (globalThis as { close?: () => void }).close;
if (typeof close === "function") close();
else exitThread();
