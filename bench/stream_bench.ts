// Stream throughput: each iteration has the peer stream 16 MiB (raw-codec items yielded by an
// async generator handler) and reads it to the end with `for await`.
//
//   deno bench -A bench/stream_bench.ts
//
// One group per transport, whose baseline is the same bytes as 1 MiB raw frames written one
// way by the peer with backpressure (no codec, no protocol, no credit). Items of 1 MiB and
// 64 KiB show the per-item cost. Peers are set up at load time.

import { BENCH_TRANSPORTS, conduitPeer, rawFramePeer } from "./_peers.ts";

const TOTAL = 16 * 1024 * 1024;

for (const transport of BENCH_TRANSPORTS) {
  const group = `stream 16 MiB over ${transport}`;
  const frames = await rawFramePeer(transport);
  Deno.bench({
    name: `frames/${transport} one-way 16 × 1MiB`,
    group,
    baseline: true,
    fn: async () => {
      await frames.source(16, 1024 * 1024);
    },
  });
  const client = await conduitPeer(transport, "raw");
  for (const itemBytes of [1024 * 1024, 64 * 1024]) {
    const count = TOTAL / itemBytes;
    const label = itemBytes >= 1024 * 1024 ? "1MiB" : "64KiB";
    Deno.bench({
      name: `channel/${transport} stream ${count} × ${label}`,
      group,
      fn: async () => {
        let bytes = 0;
        const stream = client.channel.remote.blobs({ count, bytes: itemBytes });
        for await (const item of stream) bytes += item.length;
        if (bytes !== TOTAL) throw new Error(`streamed ${bytes} of ${TOTAL} bytes`);
      },
    });
  }
}
