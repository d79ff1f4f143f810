import { testTransportConformance } from "./_conformance.ts";
import { memoryPair } from "./memory.ts";
import { memory } from "./_test_pairs.ts";

testTransportConformance({
  name: "memory",
  pair: memory.pair,
  stuckPeer: () => {
    const [a, b] = memoryPair({ highWaterMark: 65536 });
    return Promise.resolve({ transport: a, kill: () => b.abort(), cleanup: () => b.close() });
  },
  abortSeenByPeer: "error",
});
