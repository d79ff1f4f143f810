import { testTransportConformance } from "./_conformance.ts";
import { memoryPair } from "./memory.ts";

testTransportConformance({
  name: "memory",
  pair: () => {
    const [a, b] = memoryPair();
    return Promise.resolve({ a, b });
  },
  stuckPeer: () => {
    const [a, b] = memoryPair({ highWaterMark: 65536 });
    return Promise.resolve({ transport: a, kill: () => b.abort(), cleanup: () => b.close() });
  },
  abortSeenByPeer: "error",
});
