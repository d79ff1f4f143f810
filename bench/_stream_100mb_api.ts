// What bench/stream_100mb.ts streams, shared by the parent and its child peer.

import type { Codec } from "@conduit/ipc/codecs";

/** The codecs compared: today's default and the lossless worker codec. */
export type StreamCodecName = "json" | "structured";

/** The streaming service. */
export interface StreamApi {
  /** `count` chunks of `bytes` bytes each, every byte of chunk `i` equal to `i & 0xff`. */
  chunks(param: { count: number; bytes: number }): AsyncIterable<Uint8Array>;
}

/** The service's handlers: a fresh chunk per item, as a producer reading a file would. */
export const streamHandlers: StreamApi = {
  async *chunks({ count, bytes }) {
    for (let i = 0; i < count; i++) yield new Uint8Array(bytes).fill(i & 0xff);
  },
};

/** The codec of that name, loaded through the public entrypoints. */
export async function streamCodec(name: StreamCodecName): Promise<Codec<unknown>> {
  if (name === "json") return (await import("@conduit/ipc/codecs/json")).jsonCodec();
  if (name === "structured") {
    return (await import("@conduit/ipc/codecs/structured")).structuredCodec();
  }
  throw new TypeError(`Unknown codec ${name}: json or structured`);
}
