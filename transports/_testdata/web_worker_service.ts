// A channel served by a worker over `self`, with ways to die: the peer of the tests of
// failures a worker transport must report.

/// <reference lib="deno.worker" />

import { openChannel } from "../../channel/mod.ts";
import { rawCodec } from "../../codecs/raw.ts";
import { type SharedRingEnd, sharedRingTransport } from "../shared_ring.ts";
import { selfTransport } from "../web_worker.ts";

/** What the service serves. */
export interface ServiceApi {
  echo(bytes: Uint8Array): Uint8Array;
  /** Never answers. */
  hang(bytes: Uint8Array): Promise<Uint8Array>;
  /** Throws outside any handler soon, which kills the worker. */
  crash(bytes: Uint8Array): Promise<Uint8Array>;
  /** Calls `self.close()` soon. */
  quit(bytes: Uint8Array): Promise<Uint8Array>;
}

const handlers: ServiceApi = {
  echo: (bytes) => bytes,
  hang: () => new Promise(() => {}),
  crash: () => {
    setTimeout(() => {
      throw new Error("worker crashed on purpose");
    }, 10);
    return new Promise(() => {});
  },
  quit: () => {
    setTimeout(() => self.close(), 10);
    return new Promise(() => {});
  },
};

// `?over=ring`: the first message is a shared ring end to serve over instead of `self`.
const overRing = new URL(import.meta.url).searchParams.get("over") === "ring";
const transport = overRing
  ? sharedRingTransport(
    await new Promise<SharedRingEnd>((resolve) => self.onmessage = (event) => resolve(event.data)),
  )
  : selfTransport();
const channel = await openChannel(transport, { codec: rawCodec(), handlers });
await channel.closed;
