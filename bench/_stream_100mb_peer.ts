// The child of bench/stream_100mb.ts: serves `chunks` over its stdio with the codec named in
// its arguments, and exits once the parent closes the channel.
//
//   deno run bench/_stream_100mb_peer.ts <json|structured>

import { openChannel } from "@conduit/ipc/channel";
import { stdioTransport } from "@conduit/ipc/transports/stdio";
import { streamCodec, type StreamCodecName, streamHandlers } from "./_stream_100mb_api.ts";

const channel = await openChannel(stdioTransport(), {
  codec: await streamCodec(Deno.args[0] as StreamCodecName),
  handlers: streamHandlers,
  defaultTimeout: Infinity,
});
await channel.closed.catch(() => {});
