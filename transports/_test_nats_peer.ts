// A NATS transport peer in its own process, for tests that kill it or starve its event loop.
// Usage: deno run -A transports/_test_nats_peer.ts <server url> <subject> <mode> [ms]
//   idle:  connects, then never reads (the peer of the dies-mid-write case)
//   block: connects with a 64 MiB window, blocks its event loop for <ms> (a consumer so slow
//          that the server drops it), then reads, checking every byte against streamByte(),
//          and prints "bytes N" and how the stream ended ("ended", or "error Name: cause").
// It prints "connected" once its transport is up.

import { connect } from "@nats-io/transport-node";
import { connectNats } from "./nats.ts";

/** The byte at `offset` of the stream the block mode expects. */
export function streamByte(offset: number): number {
  return (offset * 31 + (offset >> 8)) & 0xff;
}

if (import.meta.main) {
  const [url, subject, mode, ms] = Deno.args;
  // Back at once after the server drops it as a slow consumer.
  const nc = await connect({ servers: url, reconnectTimeWait: 100 });
  if (mode === "block") {
    const transport = await connectNats(nc, subject, { windowBytes: 64 << 20, heartbeat: 1000 });
    console.log("connected");
    const until = Date.now() + Number(ms);
    while (Date.now() < until) {
      // Busy: the socket is not read, and the server's buffer for this client fills.
    }
    let offset = 0;
    try {
      for await (const chunk of transport.readable) {
        for (let i = 0; i < chunk.length; i++) {
          if (chunk[i] !== streamByte(offset + i)) throw new Error(`corrupt byte at ${offset + i}`);
        }
        offset += chunk.length;
      }
      console.log(`bytes ${offset}\nended`);
    } catch (error) {
      const cause = (error as Error).cause as Error | undefined;
      console.log(`bytes ${offset}\nerror ${(error as Error).name}: ${cause?.name}`);
    }
    await transport.close();
    await nc.close();
  } else {
    await connectNats(nc, subject, { heartbeat: 100 });
    console.log("connected");
    setInterval(() => {}, 60_000);
  }
}
