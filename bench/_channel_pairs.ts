// Fixtures for bench/channel_bench.ts: both ends in this process,
// over a memory pair or a real Unix socket, as a conduit channel or as raw frames echoed back
// (the same transport and framing with no codec or protocol: the floor under a call).

import { jsonCodec } from "../codecs/json.ts";
import { rawCodec } from "../codecs/raw.ts";
import { FrameDecoder } from "../framing/frame_decoder.ts";
import { FrameWriter } from "../framing/frame_writer.ts";
import { memory, unix } from "../transports/_test_pairs.ts";
import { type Channel, openChannel } from "../channel/mod.ts";

/** The transports the channel benchmarks run over. */
export type PairKind = "memory" | "unix";

/** The transport pairs of the tests (transports/_test_pairs.ts) the benchmarks run over. */
const PAIRS = { memory, unix };

/** The service the benchmarks call. */
export interface EchoApi {
  echo(
    value: { id: number; name: string; tags: string[] },
  ): { id: number; name: string; tags: string[] };
}

/** A small RPC-like param (~60 bytes of JSON). */
export const SMALL = { id: 42, name: "conduit", tags: ["bench", "small", "call"] };

/** The service the raw-codec benchmarks call: the same echo, on bytes. */
export interface RawEchoApi {
  echo(value: Uint8Array): Uint8Array;
}

/** A client channel to an echo server channel over `kind`, with the JSON or the raw codec. */
export async function channelPair<Api extends EchoApi | RawEchoApi = EchoApi>(
  kind: PairKind,
  maxInFlight = 1024,
  codec: "json" | "raw" = "json",
): Promise<{ client: Channel<Api>; close: () => Promise<void> }> {
  const pair = await PAIRS[kind].pair();
  const [server, client] = await Promise.all([
    openChannel(pair.a, {
      codec: codec === "raw" ? rawCodec() : jsonCodec(),
      maxInFlight,
      handlers: { echo: (value: unknown) => value },
    }),
    openChannel<Api>(pair.b, { codec: codec === "raw" ? rawCodec() : jsonCodec(), maxInFlight }),
  ]);
  return {
    client,
    async close() {
      await Promise.all([client.close(), server.close()]);
      await pair.cleanup();
    },
  };
}

/** Raw frames echoed by the other end: `ping(frame)` resolves when it comes back. */
export async function framePair(
  kind: PairKind,
): Promise<{ ping: (frame: Uint8Array) => Promise<void>; close: () => Promise<void> }> {
  const pair = await PAIRS[kind].pair();
  const echo = (async () => {
    const writer = new FrameWriter(pair.a.writable);
    const decoder = new FrameDecoder();
    const reader = pair.a.readable.getReader();
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) break;
      decoder.push(value!);
      let frame: Uint8Array | undefined;
      while ((frame = decoder.next()) !== undefined) writer.write(frame);
    }
    await writer.close().catch(() => {});
  })();
  const writer = new FrameWriter(pair.b.writable);
  const decoder = new FrameDecoder();
  const reader = pair.b.readable.getReader();
  const waiting: Array<() => void> = [];
  const reading = (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) break;
      decoder.push(value!);
      while (decoder.next() !== undefined) waiting.shift()?.();
    }
  })();
  return {
    ping(frame) {
      const { promise, resolve } = Promise.withResolvers<void>();
      waiting.push(resolve);
      writer.write(frame);
      return promise;
    },
    async close() {
      await writer.close().catch(() => {});
      await Promise.all([echo, reading]);
      await pair.cleanup();
    },
  };
}
