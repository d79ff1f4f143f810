import assert from "node:assert/strict";
import { TransportClosedError } from "../errors.ts";
import { testTransportConformance } from "./_conformance.ts";
import { messagePortTransport, selfTransport, transfer, workerTransport } from "./web_worker.ts";
import type { Transport } from "./types.ts";

const relayUrl = new URL("./_testdata/web_worker_relay.ts", import.meta.url);
const stuckUrl = new URL("./_testdata/web_worker_stuck.ts", import.meta.url);

function portPair(): [Transport, Transport] {
  const { port1, port2 } = new MessageChannel();
  return [messagePortTransport(port1), messagePortTransport(port2)];
}

/** A worker that never reads, behind the parent's transport; kill() terminates it. */
function stuckPeer() {
  const worker = new Worker(stuckUrl, { type: "module" });
  return Promise.resolve({
    transport: workerTransport(worker),
    kill: () => Promise.resolve(worker.terminate()),
    cleanup: () => Promise.resolve(worker.terminate()),
  });
}

testTransportConformance({
  name: "message port",
  pair: () => {
    const [a, b] = portPair();
    return Promise.resolve({ a, b });
  },
  stuckPeer,
  abortSeenByPeer: "error",
});

testTransportConformance({
  name: "web worker",
  pair: () => {
    // The parent's end of a real worker, which relays to a port whose other end is `b`.
    const worker = new Worker(relayUrl, { type: "module" });
    const { port1, port2 } = new MessageChannel();
    worker.postMessage(port2, [port2]);
    const a = workerTransport(worker);
    const b = messagePortTransport(port1);
    return Promise.resolve({ a, b, cleanup: () => Promise.resolve(worker.terminate()) });
  },
  stuckPeer,
  abortSeenByPeer: "error",
});
