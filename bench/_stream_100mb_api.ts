// What the report's 100 MB worker stream sends (bench/report/_workers.ts).

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

/** One streamed run: its time, the bytes received, whether every chunk arrived intact, and
 * this process's peak RSS growth. */
export interface StreamResult {
  seconds: number;
  bytes: number;
  intact: boolean;
  rssGrowth: number;
}

/**
 * Streams `bytes` in chunks of `chunkBytes` from `remote`, checking every chunk, then calls
 * `close`.
 */
export async function measureStream(
  label: string,
  remote: StreamApi,
  { bytes, chunkBytes }: { bytes: number; chunkBytes: number },
  close: () => Promise<void>,
): Promise<StreamResult> {
  const count = Math.ceil(bytes / chunkBytes);
  const rssBefore = Deno.memoryUsage().rss;
  let rssPeak = rssBefore;
  let received = 0;
  let intact = true;
  let index = 0;
  const start = performance.now();
  for await (const item of remote.chunks({ count, bytes: chunkBytes })) {
    if (item instanceof Uint8Array) {
      received += item.length;
      intact &&= item.length === chunkBytes && item[0] === (index & 0xff) &&
        item[chunkBytes - 1] === (index & 0xff);
    } else {
      // What the JSON codec makes of a Uint8Array: an object of index keys.
      received += Object.keys(item as object).length;
      intact = false;
    }
    if ((index++ & 63) === 0) rssPeak = Math.max(rssPeak, Deno.memoryUsage().rss);
  }
  const seconds = (performance.now() - start) / 1000;
  rssPeak = Math.max(rssPeak, Deno.memoryUsage().rss);
  await close();
  if (received !== count * chunkBytes) {
    throw new Error(`${label}: received ${received} of ${count * chunkBytes} bytes`);
  }
  return { seconds, bytes: received, intact, rssGrowth: rssPeak - rssBefore };
}
