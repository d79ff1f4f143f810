// comlink against conduit between threads: one group per row, comlink the baseline.
//
//   deno bench -A bench/threads_bench.ts
//
// The clients (bench/_peers.ts) reach the same service in a Deno module Worker
// (bench/_thread_worker.ts): comlink over postMessage, a conduit channel over the Web Worker
// transport, and one over a shared ring. Rows: a small call (the report's `small` RPC-like object, JSON for conduit,
// structured clone for comlink), 256 small calls in flight, a 1 MiB buffer moved to the
// worker (transferred by both), the report's 1 MB structured object echoed. The workers are
// started at load time. The report's threads section (bench/report/_threads.ts) measures
// the same with percentiles and interleaved rounds, and prints the ratios.

import { THREAD_PEERS, threadPeer } from "./_peers.ts";
import { reportPayloads } from "./report/_payloads.ts";

const [small, mb] = reportPayloads(["small", "1MB"]);

for (const kind of THREAD_PEERS) {
  const peer = await threadPeer(kind);
  const baseline = kind === "comlink";
  Deno.bench({
    name: `threads/${kind} call small`,
    group: "threads: one small call",
    baseline,
    fn: async () => {
      await peer.echo(small.value);
    },
  });
  Deno.bench({
    name: `threads/${kind} 256 calls in flight`,
    group: "threads: 256 small calls in flight",
    baseline,
    fn: async () => {
      await Promise.all(Array.from({ length: 256 }, () => peer.echo(small.value)));
    },
  });
  Deno.bench({
    name: `threads/${kind} transfer 1 MiB`,
    group: "threads: 1 MiB buffer moved to the worker",
    baseline,
    fn: async () => {
      await peer.take(new Uint8Array(1 << 20));
    },
  });
  Deno.bench({
    name: `threads/${kind} echo 1 MB object`,
    group: "threads: 1 MB structured object echoed",
    baseline,
    fn: async () => {
      await peer.echo(mb.value);
    },
  });
}
