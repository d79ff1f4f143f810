import { testTransportConformance } from "./_conformance.ts";
import { sharedRingPair, sharedRingTransport } from "./shared_ring.ts";

const relayUrl = new URL("./_testdata/shared_ring_relay.ts", import.meta.url);
const stuckUrl = new URL("./_testdata/shared_ring_stuck.ts", import.meta.url);

function stuckPeer() {
  const worker = new Worker(stuckUrl, { type: "module" });
  const [mine, theirs] = sharedRingPair({ ringBytes: 64 * 1024 });
  worker.postMessage(theirs, [theirs.port]);
  return Promise.resolve({
    transport: sharedRingTransport(mine, { worker }),
    kill: () => Promise.resolve(worker.terminate()),
    cleanup: () => Promise.resolve(worker.terminate()),
  });
}

testTransportConformance({
  name: "shared ring (one thread)",
  pair: () => {
    const [mine, theirs] = sharedRingPair({ ringBytes: 64 * 1024 });
    // Both ends share this thread: spinning would only wait for ourselves.
    const a = sharedRingTransport(mine, { spinMicros: 0 });
    const b = sharedRingTransport(theirs, { spinMicros: 0 });
    return Promise.resolve({ a, b });
  },
  stuckPeer,
  abortSeenByPeer: "error",
});

testTransportConformance({
  name: "shared ring (two threads)",
  pair: () => {
    // `a` is this thread's end of a ring to a worker, which relays to a second ring whose
    // other end is `b`.
    const worker = new Worker(relayUrl, { type: "module" });
    const [mine, theirs] = sharedRingPair();
    const [down, back] = sharedRingPair();
    worker.postMessage({ up: theirs, down }, [theirs.port, down.port]);
    const a = sharedRingTransport(mine, { worker });
    const b = sharedRingTransport(back);
    return Promise.resolve({ a, b, cleanup: () => Promise.resolve(worker.terminate()) });
  },
  stuckPeer,
  abortSeenByPeer: "error",
});
