// The service of the threads benchmarks in a Deno module Worker: `echo` (a value back) and
// `take` (a buffer moved here, its length back), served the way the first message says: with
// comlink (structured clone, transfer for buffers), or by a conduit channel over the Web Worker
// transport or a shared ring.

/// <reference lib="deno.worker" />

import * as Comlink from "comlink";
import { type ChannelOptions, openChannel } from "../channel/mod.ts";
import { jsonCodec } from "../codecs/json.ts";
import { rawCodec } from "../codecs/raw.ts";
import { type SharedRingEnd, sharedRingTransport } from "../transports/shared_ring.ts";
import { selfTransport } from "../transports/web_worker.ts";

/** What both conduit ends use: JSON values, raw bytes for `take`'s param. */
export const THREAD_OPTIONS: ChannelOptions = {
  codec: jsonCodec(),
  methodCodecs: { take: { param: rawCodec() } },
  maxInFlight: 1024,
};

/** The service. */
export interface ThreadService {
  echo(value: unknown): unknown;
  take(bytes: Uint8Array): number;
}

type Start = { kind: "comlink" | "web worker" } | { kind: "shared ring"; end: SharedRingEnd };

if (import.meta.main) {
  self.onmessage = async ({ data }: MessageEvent<Start>) => {
    self.onmessage = null;
    if (data.kind === "comlink") {
      Comlink.expose({
        echo: (value: unknown) => value,
        take: (bytes: Uint8Array) => bytes.length,
      });
      return;
    }
    const transport = data.kind === "shared ring" ? sharedRingTransport(data.end) : selfTransport();
    const channel = await openChannel(transport, {
      ...THREAD_OPTIONS,
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
}
