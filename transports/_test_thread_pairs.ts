// The thread transport pairs the tests run over: both ends in the test's thread, one through a
// real worker (which relays between this thread's end of one link and a second link whose
// other end is also here), and each in one thread.

import {
  messagePortTransport,
  type WebWorkerTransportOptions,
  workerTransport,
} from "./web_worker.ts";
import { sharedRingPair, type SharedRingPairOptions, sharedRingTransport } from "./shared_ring.ts";
import type { TestPair, TransportKind } from "./_test_pairs.ts";

const webWorkerRelay = new URL("./_testdata/web_worker_relay.ts", import.meta.url);
const sharedRingRelay = new URL("./_testdata/shared_ring_relay.ts", import.meta.url);

/**
 * `a` is the parent's end of a real worker; the worker relays to a port whose end is `b`.
 * Every end, the worker's two included, takes `options`.
 */
export function webWorkerRelayPair(options: WebWorkerTransportOptions = {}): TestPair {
  const worker = new Worker(webWorkerRelay, { type: "module" });
  const { port1, port2 } = new MessageChannel();
  worker.postMessage({ port: port2, options }, [port2]);
  return released(
    workerTransport(worker, options),
    messagePortTransport(port1, options),
    worker,
  );
}

/** A MessageChannel's two ends, in this thread. */
export function messagePortPair(): TestPair {
  const { port1, port2 } = new MessageChannel();
  return released(messagePortTransport(port1), messagePortTransport(port2));
}

/** `a` is this thread's end of a ring to a worker, which relays to a ring whose end is `b`. */
export function sharedRingRelayPair(options: SharedRingPairOptions = {}): TestPair {
  const worker = new Worker(sharedRingRelay, { type: "module" });
  const [mine, theirs] = sharedRingPair(options);
  const [down, back] = sharedRingPair(options);
  worker.postMessage({ up: theirs, down }, [theirs.port, down.port]);
  return released(sharedRingTransport(mine, { worker }), sharedRingTransport(back), worker);
}

/** Both ends of a ring in this thread, not spinning (there is nobody else to wait for). */
export function sharedRingLocalPair(options: SharedRingPairOptions = {}): TestPair {
  const [mine, theirs] = sharedRingPair(options);
  return released(
    sharedRingTransport(mine, { spinMicros: 0 }),
    sharedRingTransport(theirs, { spinMicros: 0 }),
  );
}

/** The kinds of the channel tests, from a pair maker. */
export function threadKind(name: string, pair: () => TestPair): TransportKind {
  return { name, pair: () => Promise.resolve(pair()) };
}

function released(a: TestPair["a"], b: TestPair["b"], worker?: Worker): TestPair {
  return {
    a,
    b,
    async cleanup() {
      await Promise.all([a.close(), b.close()]);
      worker?.terminate();
    },
  };
}
