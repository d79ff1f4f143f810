// Fixtures for bench/channel_bench.ts and bench/channel_latency.ts: both ends in this process,
// over a memory pair or a real Unix socket, as a conduit channel or as raw frames echoed back
// (the same transport and framing with no codec or protocol: the floor under a call).

import { jsonCodec } from "../codecs/json.ts";
import { FrameDecoder } from "../framing/frame_decoder.ts";
import { FrameWriter } from "../framing/frame_writer.ts";
import { memory, type TestPair, unix } from "../channel/_test_transports.ts";
import { type Channel, openChannel } from "../channel/mod.ts";

/** The transports the channel benchmarks run over. */
export type PairKind = "memory" | "unix";

/** The service the benchmarks call. */
export interface EchoApi {
  echo(
    value: { id: number; name: string; tags: string[] },
  ): { id: number; name: string; tags: string[] };
}

/** A small RPC-like param (~60 bytes of JSON). */
export const SMALL = { id: 42, name: "conduit", tags: ["bench", "small", "call"] };

/** Two connected transports of `kind`, and how to release them (the channel tests' pairs). */
export function transportPair(kind: PairKind): Promise<TestPair> {
  return (kind === "memory" ? memory : unix).pair();
}

/** A client channel to an echo server channel over `kind`. */
export async function channelPair(
  kind: PairKind,
  maxInFlight = 1024,
): Promise<{ client: Channel<EchoApi>; close: () => Promise<void> }> {
  const pair = await transportPair(kind);
  const [server, client] = await Promise.all([
    openChannel(pair.a, {
      codec: jsonCodec(),
      maxInFlight,
      handlers: { echo: (value: unknown) => value },
    }),
    openChannel<EchoApi>(pair.b, { codec: jsonCodec(), maxInFlight }),
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
  const pair = await transportPair(kind);
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
