// The channel tests (channel/*_test.ts) run over the Web Worker transport: the parent's end
// of a real worker, relayed by the worker to a MessagePort, and a MessagePort pair. The
// channel tests loop over `transportKinds`; this file (its own isolate under `deno test`)
// replaces them with these kinds before loading the tests.

import { type TransportKind, transportKinds } from "./_test_pairs.ts";
import { messagePortTransport, workerTransport } from "./web_worker.ts";

const relayUrl = new URL("./_testdata/web_worker_relay.ts", import.meta.url);

const webWorker: TransportKind = {
  name: "web worker",
  pair() {
    const worker = new Worker(relayUrl, { type: "module" });
    const { port1, port2 } = new MessageChannel();
    worker.postMessage(port2, [port2]);
    const a = workerTransport(worker);
    const b = messagePortTransport(port1);
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

const messagePort: TransportKind = {
  name: "message port",
  pair() {
    const { port1, port2 } = new MessageChannel();
    const a = messagePortTransport(port1);
    const b = messagePortTransport(port2);
    return Promise.resolve({
      a,
      b,
      cleanup: () => Promise.all([a.close(), b.close()]).then(() => {}),
    });
  },
};

transportKinds.splice(0, transportKinds.length, webWorker, messagePort);
await import("../channel/channel_test.ts");
await import("../channel/body_ownership_test.ts");
await import("../channel/recycle_test.ts");
await import("../channel/hostile_test.ts");
