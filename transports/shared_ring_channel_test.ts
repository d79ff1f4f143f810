// The channel tests (channel/*_test.ts) run over the shared ring: a real two-thread pair (this
// thread's end of a ring to a worker, which relays to a second ring whose other end is also
// here) and a pair in this thread. As in web_worker_channel_test.ts, this file (its own
// isolate under `deno test`) replaces the channel tests' transport kinds before loading them.

import { type TransportKind, transportKinds } from "./_test_pairs.ts";
import { sharedRingPair, sharedRingTransport } from "./shared_ring.ts";

const relayUrl = new URL("./_testdata/shared_ring_relay.ts", import.meta.url);

const twoThreads: TransportKind = {
  name: "shared ring (two threads)",
  pair() {
    const worker = new Worker(relayUrl, { type: "module" });
    const [mine, theirs] = sharedRingPair();
    const [down, back] = sharedRingPair();
    worker.postMessage({ up: theirs, down }, [theirs.port, down.port]);
    const a = sharedRingTransport(mine, { worker });
    const b = sharedRingTransport(back);
    return Promise.resolve({
      a,
      b,
      async cleanup() {
        await Promise.all([a.close(), b.close()]);
        worker.terminate();
      },
    });
  },
};

const oneThread: TransportKind = {
  name: "shared ring (one thread)",
  pair() {
    const [mine, theirs] = sharedRingPair();
    const a = sharedRingTransport(mine, { spinMicros: 0 });
    const b = sharedRingTransport(theirs, { spinMicros: 0 });
    return Promise.resolve({
      a,
      b,
      cleanup: () => Promise.all([a.close(), b.close()]).then(() => {}),
    });
  },
};

transportKinds.splice(0, transportKinds.length, twoThreads, oneThread);
await import("../channel/channel_test.ts");
await import("../channel/body_ownership_test.ts");
await import("../channel/recycle_test.ts");
await import("../channel/hostile_test.ts");
