// Notification throughput: each iteration sends 1,000 one-way messages and waits for the
// peer's count, which arrives after all of them (so the figure per iteration ÷ 1,000 is the
// cost of one message, pipelined).
//
//   deno bench -A bench/notify_bench.ts
//
// One group per transport, whose baseline is 64-byte raw frames sent one way over the same
// transport (no codec, no protocol). Against it: conduit notifications of 64 raw bytes (raw
// codec) and of the ~110-byte small object (msgpack, JSON). Peers are set up at load time.

import { BENCH_TRANSPORTS, conduitPeer, rawFramePeer } from "./_peers.ts";
import type { EchoClient } from "./report/_clients.ts";
import { rawNote, reportPayloads } from "./report/_payloads.ts";

const BATCH = 1000;
const [small] = reportPayloads(["small"]);
const note64 = rawNote();

for (const transport of BENCH_TRANSPORTS) {
  const bench = (name: string, client: EchoClient, value: unknown, baseline = false) =>
    Deno.bench({
      name,
      group: `notify ${BATCH} over ${transport}`,
      baseline,
      fn: async () => {
        for (let i = 0; i < BATCH; i++) client.note(value);
        await client.noted();
      },
    });
  bench(`frames/${transport} one-way ${BATCH} × 64B`, await rawFramePeer(transport), note64, true);
  bench(
    `channel/${transport} notify ${BATCH} × raw 64B`,
    await conduitPeer(transport, "raw"),
    note64,
  );
  for (const codec of ["msgpack", "json"] as const) {
    bench(
      `channel/${transport} notify ${BATCH} × ${codec} small`,
      await conduitPeer(transport, codec),
      small.value,
    );
  }
}
