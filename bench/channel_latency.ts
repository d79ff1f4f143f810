// Latency percentiles and throughput of small channel calls, next to raw frames echoed over the
// same transport, both ends in this process:
//
//   deno run -A bench/channel_latency.ts [calls]
//
// Prints, per transport: p50/p99 of a raw-frame ping-pong and of an awaited channel call
// (json codec, ~60-byte param), and calls/s with 1 and with 256 calls in flight.

import { channelPair, framePair, type PairKind, SMALL } from "./_channel_pairs.ts";

const CALLS = Number(Deno.args[0] ?? 20_000);
const WARMUP = 2_000;

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function timeEach(n: number, op: () => Promise<unknown>): Promise<Float64Array> {
  for (let i = 0; i < WARMUP; i++) await op();
  const samples = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await op();
    samples[i] = performance.now() - start;
  }
  return samples.sort();
}

async function throughput(total: number, inFlight: number, op: () => Promise<unknown>) {
  let started = 0;
  const start = performance.now();
  const lane = async () => {
    while (started < total) {
      started++;
      await op();
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return total / ((performance.now() - start) / 1000);
}

const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;
const rate = (perSecond: number) => `${Math.round(perSecond).toLocaleString("en-US")}/s`;
const frame = new TextEncoder().encode(JSON.stringify(SMALL));

console.log(
  `| transport | raw ping-pong p50 / p99 | call p50 / p99 | calls/s, 1 in flight | calls/s, 256 in flight |`,
);
console.log(`| --- | --- | --- | --- | --- |`);
for (const kind of ["memory", "unix"] as PairKind[]) {
  const frames = await framePair(kind);
  const raw = await timeEach(CALLS, () => frames.ping(frame));
  await frames.close();

  const { client, close } = await channelPair(kind);
  const echo = client.remote.echo;
  const calls = await timeEach(CALLS, () => echo(SMALL));
  const one = await throughput(CALLS, 1, () => echo(SMALL));
  const many = await throughput(CALLS * 5, 256, () => echo(SMALL));
  await close();

  console.log(
    `| ${kind} | ${us(percentile(raw, 0.5))} / ${us(percentile(raw, 0.99))} | ${
      us(percentile(calls, 0.5))
    } / ${us(percentile(calls, 0.99))} | ${rate(one)} | ${rate(many)} |`,
  );
}
