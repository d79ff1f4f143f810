// Where a small call's time goes between threads: a 100-byte round trip to a Worker by raw
// postMessage, through the Web Worker transport (no end spinning after a post, the parent's
// end only as by default, both ends) and through the shared ring (each echoed by the worker's
// transport, no framing or channel).
// Interleaved rounds; p50 and p99 of all samples.
//
//   deno run -A bench/threads_layers.ts [rounds]

import { sharedRingPair, sharedRingTransport } from "../transports/shared_ring.ts";
import { workerTransport } from "../transports/web_worker.ts";
import type { Transport } from "../transports/types.ts";

const ROUNDS = Number(Deno.args[0] ?? 5);
/** The spin of the "both ends" row. */
const SPIN_MICROS = 150;
const TRIPS = 2_000;
const KINDS = [
  "raw postMessage",
  "web worker transport, spinMicros 0",
  "web worker transport (default: the parent's end spins)",
  "web worker transport, both ends spinMicros 150",
  "shared ring transport",
] as const;
type Kind = typeof KINDS[number];
const message = new Uint8Array(100);
const workerUrl = new URL("./_threads_echo_worker.ts", import.meta.url);

interface Echo {
  trip(): Promise<unknown>;
  close(): Promise<void>;
}

function start(kind: Kind): Echo {
  const worker = new Worker(workerUrl, { type: "module" });
  if (kind === "raw postMessage") {
    worker.postMessage("raw");
    let answered: () => void = () => {};
    worker.onmessage = () => answered();
    return {
      trip: () =>
        new Promise<void>((resolve) => {
          answered = resolve;
          worker.postMessage(message);
        }),
      close: () => Promise.resolve(worker.terminate()),
    };
  }
  let transport: Transport;
  if (kind === "web worker transport, spinMicros 0") {
    worker.postMessage("web worker");
    transport = workerTransport(worker, { spinMicros: 0 });
  } else if (kind === "web worker transport (default: the parent's end spins)") {
    worker.postMessage("web worker");
    transport = workerTransport(worker);
  } else if (kind === "web worker transport, both ends spinMicros 150") {
    worker.postMessage({ spinMicros: SPIN_MICROS });
    transport = workerTransport(worker, { spinMicros: SPIN_MICROS });
  } else {
    const [mine, theirs] = sharedRingPair();
    worker.postMessage(theirs, [theirs.port]);
    transport = sharedRingTransport(mine, { worker });
  }
  const writer = transport.writable.getWriter();
  const reader = transport.readable.getReader();
  return {
    trip: () => {
      void writer.write(message);
      return reader.read();
    },
    close: async () => {
      writer.releaseLock();
      reader.releaseLock();
      await transport.close();
      worker.terminate();
    },
  };
}

const echoes = new Map(KINDS.map((kind) => [kind, start(kind)]));
const samples = new Map<Kind, number[]>(KINDS.map((kind) => [kind, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < KINDS.length; i++) {
    const kind = KINDS[(i + round) % KINDS.length];
    const echo = echoes.get(kind)!;
    for (let j = 0; j < 200; j++) await echo.trip();
    for (let j = 0; j < TRIPS; j++) {
      const started = performance.now();
      await echo.trip();
      samples.get(kind)!.push(performance.now() - started);
    }
  }
}
for (const echo of echoes.values()) await echo.close();

const at = (sorted: number[], p: number) => sorted[Math.ceil(sorted.length * p) - 1];
console.log(`load average ${Deno.loadavg().map((x) => x.toFixed(1)).join(" ")}`);
console.log("| 100-byte round trip to a Worker | p50 | p99 |");
console.log("| --- | --- | --- |");
for (const kind of KINDS) {
  const sorted = samples.get(kind)!.sort((a, b) => a - b);
  const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;
  console.log(`| ${kind} | ${us(at(sorted, 0.5))} | ${us(at(sorted, 0.99))} |`);
}
