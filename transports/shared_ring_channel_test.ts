// The channel tests (channel/*_test.ts) run over the shared ring: a real two-thread pair (this
// thread's end of a ring to a worker, which relays to a second ring whose other end is also
// here) and a pair in this thread. As in web_worker_channel_test.ts, this file (its own
// isolate under `deno test`) replaces the channel tests' transport kinds before loading them.

import { transportKinds } from "./_test_pairs.ts";
import { sharedRingLocalPair, sharedRingRelayPair, threadKind } from "./_test_thread_pairs.ts";

transportKinds.splice(
  0,
  transportKinds.length,
  threadKind("shared ring (two threads)", () => sharedRingRelayPair()),
  threadKind("shared ring (one thread)", () => sharedRingLocalPair()),
);
await import("../channel/channel_test.ts");
await import("../channel/body_ownership_test.ts");
await import("../channel/recycle_test.ts");
await import("../channel/hostile_test.ts");
