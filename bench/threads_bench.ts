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
  const bench = (group: string, name: string, fn: () => Promise<unknown>) =>
    Deno.bench({
      name: `threads/${kind} ${name}`,
      group,
      baseline: kind === "comlink",
      fn: async () => void await fn(),
    });
  bench("threads: one small call", "call small", () => peer.echo(small.value));
  bench(
    "threads: 256 small calls in flight",
    "256 calls in flight",
    () => Promise.all(Array.from({ length: 256 }, () => peer.echo(small.value))),
  );
  bench(
    "threads: 1 MiB buffer moved to the worker",
    "transfer 1 MiB",
    () => peer.take(new Uint8Array(1 << 20)),
  );
  bench("threads: 1 MB structured object echoed", "echo 1 MB object", () => peer.echo(mb.value));
}
