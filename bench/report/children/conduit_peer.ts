// The report's conduit peer: serves BenchApi over the transport and codec named in its
// arguments, and exits once the parent closes the channel.
//
//   deno run -A conduit_peer.ts <stdio|unix|tcp> <path|port|-> <codec>

import { type Channel, openChannel } from "../../../channel/channel.ts";
import { jsonCodec } from "../../../codecs/json.ts";
import type { Transport } from "../../../transports/types.ts";
import {
  type BenchApi,
  type CodecName,
  methodCodecsFor,
  REPORT_MAX_FRAME_BYTES,
} from "../_bench_api.ts";
import { connectParent } from "./_connect.ts";

/** Serves BenchApi with `codec` over `transport`; resolves once the channel is open. */
export async function serveBench(transport: Transport, codec: CodecName): Promise<Channel> {
  const { methodCodecs } = await methodCodecsFor(codec);
  let notes = 0;
  const handlers: BenchApi = {
    echo: (value) => value,
    echoSmall: (value) => value,
    note: () => {
      notes++;
    },
    noted: () => notes,
    async *blobs({ count, bytes }) {
      // One buffer, yielded again and again: the stream measures the channel, not allocation.
      const item = new Uint8Array(bytes).fill(0x5a);
      for (let i = 0; i < count; i++) yield item;
    },
  };
  return await openChannel(transport, {
    codec: jsonCodec(),
    methodCodecs,
    handlers,
    maxFrameBytes: REPORT_MAX_FRAME_BYTES,
    defaultTimeout: Infinity,
  });
}

if (import.meta.main) {
  const [kind, address, codec] = Deno.args;
  const channel = await serveBench(await connectParent(kind, address), codec as CodecName);
  await channel.closed.catch(() => {});
}
