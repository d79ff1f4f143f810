// The channel tests (channel/*_test.ts) run over the Web Worker transport: the parent's end
// of a real worker, relayed by the worker to a MessagePort (with and without the spin after a
// post), and a MessagePort pair. The
// channel tests loop over `transportKinds` (transports/_test_pairs.ts); this file (its own
// isolate under `deno test`) replaces them with these kinds before loading the tests.

import { transportKinds } from "./_test_pairs.ts";
import { messagePortPair, threadKind, webWorkerRelayPair } from "./_test_thread_pairs.ts";

transportKinds.splice(
  0,
  transportKinds.length,
  threadKind("web worker", () => webWorkerRelayPair()),
  threadKind("web worker, spinMicros 150", () => webWorkerRelayPair({ spinMicros: 150 })),
  threadKind("message port", messagePortPair),
);
await import("../channel/channel_test.ts");
await import("../channel/body_ownership_test.ts");
await import("../channel/recycle_test.ts");
await import("../channel/hostile_test.ts");
