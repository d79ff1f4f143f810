// The report's conduit peer: serves BenchApi over the transport and codec named in its
// arguments, and exits once the parent closes the channel.
//
//   deno run -A conduit_peer.ts <stdio|unix|tcp> <path|port|-> <codec>

import { openChannel } from "../../../channel/channel.ts";
import { jsonCodec } from "../../../codecs/json.ts";
import {
  type BenchApi,
  type CodecName,
  methodCodecsFor,
  REPORT_MAX_FRAME_BYTES,
} from "../_bench_api.ts";
import { connectParent } from "./_connect.ts";

const [kind, address, codec] = Deno.args;
const { methodCodecs } = await methodCodecsFor(codec as CodecName);
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
const channel = await openChannel(await connectParent(kind, address), {
  codec: jsonCodec(),
  methodCodecs,
  handlers,
  maxFrameBytes: REPORT_MAX_FRAME_BYTES,
  defaultTimeout: Infinity,
});
await channel.closed.catch(() => {});
