// comlink against conduit between threads, in one run with interleaved rounds:
//
//   deno run -A bench/threads_ratios.ts [rounds]
//
// Three clients of the same service in a Deno module Worker: comlink over postMessage (the
// baseline), a conduit channel over the Web Worker transport, and one over a shared ring.
// Rows: small-call p50 and p99 (one call at a time), calls/s with 256 in flight, MB/s of
// 1 MiB buffers moved to the worker (transferred, its length back), MB/s of the 1 MB
// structured object echoed (bench/report/_payloads.ts; MB/s counts its compact JSON bytes).
// Each round measures every row for every client, the clients' order rotating, so a machine
// busy for a while weighs on all of them; rates are the median of the rounds, percentiles
// come from the samples of all rounds. A ratio above 1 means faster than comlink.

import {
  THREAD_PEERS,
  type ThreadPeer,
  threadPeer,
  type ThreadPeerKind,
} from "./_threads_peers.ts";
import { reportPayloads } from "./report/_payloads.ts";

const ROUNDS = Number(Deno.args[0] ?? 5);
const SMALL_CALLS = 2_000;
const FLIGHT_CALLS = 20_000;
const IN_FLIGHT = 256;
const MIB_CALLS = 60;
const OBJECT_CALLS = 6;

const [small, mb] = reportPayloads(["small", "1MB"]);

interface Row {
  latencies: number[];
  callsPerSecond: number[];
  transferMBps: number[];
  objectMBps: number[];
}

const peers = new Map<ThreadPeerKind, ThreadPeer>();
const rows = new Map<ThreadPeerKind, Row>();
for (const kind of THREAD_PEERS) {
  peers.set(kind, await threadPeer(kind));
  rows.set(kind, { latencies: [], callsPerSecond: [], transferMBps: [], objectMBps: [] });
}

for (let round = 0; round < ROUNDS; round++) {
  const order = THREAD_PEERS.map((_, i) => THREAD_PEERS[(i + round) % THREAD_PEERS.length]);
  for (const kind of order) {
    const peer = peers.get(kind)!;
    const row = rows.get(kind)!;
    for (let i = 0; i < 200; i++) await peer.echo(small.value);
    for (let i = 0; i < SMALL_CALLS; i++) {
      const start = performance.now();
      await peer.echo(small.value);
      row.latencies.push(performance.now() - start);
    }
    row.callsPerSecond.push(await inFlight(peer));
    let start = performance.now();
    for (let i = 0; i < MIB_CALLS; i++) await peer.take(new Uint8Array(1 << 20));
    row.transferMBps.push((MIB_CALLS * (1 << 20)) / 1e6 / ((performance.now() - start) / 1000));
    start = performance.now();
    for (let i = 0; i < OBJECT_CALLS; i++) await peer.echo(mb.value);
    row.objectMBps.push(
      (OBJECT_CALLS * mb.json.length) / 1e6 / ((performance.now() - start) / 1000),
    );
  }
}
for (const peer of peers.values()) await peer.close();

async function inFlight(peer: ThreadPeer): Promise<number> {
  let started = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (started < FLIGHT_CALLS) {
      started++;
      await peer.echo(small.value);
    }
  }));
  return FLIGHT_CALLS / ((performance.now() - start) / 1000);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)];
}

const base = rows.get("comlink")!;
const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;
const ratio = (x: number) => `${x.toFixed(2)}×`;
const figures = (row: Row) => ({
  p50: percentile(row.latencies, 0.5),
  p99: percentile(row.latencies, 0.99),
  cps: median(row.callsPerSecond),
  transfer: median(row.transferMBps),
  object: median(row.objectMBps),
});
const b = figures(base);
console.log(
  `${ROUNDS} rounds; Deno ${Deno.version.deno}; ${navigator.hardwareConcurrency} cores; ` +
    `load average ${Deno.loadavg().map((x) => x.toFixed(1)).join(" ")}`,
);
console.log(
  "| client | small call p50 | p99 | calls/s, 256 in flight | 1 MiB transfer MB/s | 1 MB object echo MB/s |",
);
console.log("| --- | --- | --- | --- | --- | --- |");
for (const kind of THREAD_PEERS) {
  const f = figures(rows.get(kind)!);
  const vs = kind === "comlink" ? ["", "", "", "", ""] : [
    ` (${ratio(b.p50 / f.p50)})`,
    ` (${ratio(b.p99 / f.p99)})`,
    ` (${ratio(f.cps / b.cps)})`,
    ` (${ratio(f.transfer / b.transfer)})`,
    ` (${ratio(f.object / b.object)})`,
  ];
  console.log(
    `| ${kind} | ${us(f.p50)}${vs[0]} | ${us(f.p99)}${vs[1]} | ` +
      `${Math.round(f.cps).toLocaleString("en-US")}${vs[2]} | ${f.transfer.toFixed(0)}${vs[3]} | ` +
      `${f.object.toFixed(1)}${vs[4]} |`,
  );
}
const ring = figures(rows.get("shared ring")!);
const worker = figures(rows.get("web worker")!);
console.log(
  `\nshared ring p50 / web worker p50: ${(ring.p50 / worker.p50).toFixed(2)} (target ≤ 0.33)`,
);
