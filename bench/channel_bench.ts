// Channel calls against raw frames echoed over the same transport, to a peer in this process
// (memory pair) or in a child process over a Unix socket, TCP or its stdio.
//
//   deno bench -A bench/channel_bench.ts
//
// One group per transport, whose baseline is a raw length-prefixed frame ping-pong of the small
// payload's JSON bytes (conduit's transport and framing, no codec or protocol): the ratios are
// the cost of the channel and the codec. The small payload is a ~110-byte RPC-like object
// (bench/_codec_payloads.ts); the raw codec carries its JSON bytes, so its cases are the
// channel's own cost. "256 in flight" times a batch of 256 concurrent calls: divide 256 by its
// time for calls/s. The peers are set up at load time; bench/report measures the same with
// percentiles and more payloads.

import { BENCH_TRANSPORTS, conduitPeer, rawFramePeer } from "./_peers.ts";
import { reportPayloads, valueFor } from "./report/_payloads.ts";

const [small, kb] = reportPayloads(["small", "1KB"]);
const batch = new Array<Promise<unknown>>(256);

for (const transport of BENCH_TRANSPORTS) {
  const bench = (
    name: string,
    fn: () => Promise<unknown>,
    options: Partial<Deno.BenchDefinition> = {},
  ) =>
    Deno.bench({
      name,
      group: `call over ${transport}`,
      fn: async () => void await fn(),
      ...options,
    });
  const frames = await rawFramePeer(transport);
  bench(`frames/${transport} ping-pong small`, () => frames.echo(small.json), { baseline: true });
  for (const codec of ["raw", "msgpack", "json"] as const) {
    const client = await conduitPeer(transport, codec);
    const value = valueFor(codec, small);
    bench(`channel/${transport} call ${codec} small`, () => client.echoSmall(value));
    if (codec === "msgpack") continue;
    bench(`channel/${transport} call ${codec} small 256 in flight`, () => {
      for (let i = 0; i < 256; i++) batch[i] = client.echoSmall(value);
      return Promise.all(batch);
    }, { n: 200 });
    const kbValue = valueFor(codec, kb);
    if (codec === "json") bench(`channel/${transport} call json 1KB`, () => client.echo(kbValue));
  }
}
