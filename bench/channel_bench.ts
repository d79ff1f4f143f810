// Small channel calls against raw frames echoed over the same transport, both ends in this
// process:
//
//   deno bench -A bench/channel_bench.ts
//
// One group per transport. The baseline is a raw-frame ping-pong of a payload the size of the
// call's param, with conduit's transport and framing and nothing else, so the ratios are the
// cost of the protocol and the json codec. "256 in flight" times a batch of 256 concurrent
// calls: divide 256 by its time for calls/s; its "raw" twin carries the param's JSON bytes
// with the raw codec, the channel's own cost.

import { channelPair, framePair, type PairKind, type RawEchoApi, SMALL } from "./_channel_pairs.ts";

const frame = new TextEncoder().encode(JSON.stringify(SMALL));

for (const kind of ["memory", "unix"] as PairKind[]) {
  const group = `channel/call ${kind}`;
  const frames = await framePair(kind);
  const { client } = await channelPair(kind);
  const echo = client.remote.echo;
  const batch = new Array<Promise<unknown>>(256);

  Deno.bench({
    name: `frames/${kind} ping-pong`,
    group,
    baseline: true,
    fn: async () => {
      await frames.ping(frame);
    },
  });
  Deno.bench({
    name: `channel/call ${kind}`,
    group,
    fn: async () => {
      await echo(SMALL);
    },
  });
  Deno.bench({
    name: `channel/call ${kind} 256 in flight`,
    group,
    n: 200,
    fn: async () => {
      for (let i = 0; i < 256; i++) batch[i] = echo(SMALL);
      await Promise.all(batch);
    },
  });
  // The channel alone: the same calls with the raw codec carry the param's JSON bytes.
  const raw = (await channelPair<RawEchoApi>(kind, 1024, "raw")).client.remote.echo;
  Deno.bench({
    name: `channel/call ${kind} 256 in flight raw`,
    group,
    n: 200,
    fn: async () => {
      for (let i = 0; i < 256; i++) batch[i] = raw(frame);
      await Promise.all(batch);
    },
  });
}
