// A hostile peer of the shared ring: it is handed its end and writes into the ring it writes
// (the test thread's incoming ring) what the scenario says, by hand, instead of opening a
// transport; then it posts "done".

/// <reference lib="deno.worker" />

import type { SharedRingEnd } from "../shared_ring.ts";

/** The header slots and the data offset of _ring.ts, as a peer would know them. */
const WRITE_POS = 0;
const WRITE_SEQ = 2;
const HEADER_BYTES = 64;

self.onmessage = (event: MessageEvent<{ end: SharedRingEnd; scenario: string }>) => {
  const { end, scenario } = event.data;
  const ring = end.outgoing;
  const header = new Int32Array(ring, 0, HEADER_BYTES / 4);
  const words = new Int32Array(ring, HEADER_BYTES);
  const bytes = new Uint8Array(ring, HEADER_BYTES);
  switch (scenario) {
    case "overlong": // a record of 1000 bytes of which 4 are published
      words[0] = 1000;
      bytes.set([1, 2, 3, 4], 4);
      Atomics.store(header, WRITE_POS, 8);
      break;
    case "huge": // a record that says it holds 2 GiB
      words[0] = 0x7ffffff0;
      Atomics.store(header, WRITE_POS, 8);
      break;
    case "past-the-ring": // one good record, published as if the ring had been filled twice over
      words[0] = 4;
      bytes.set([1, 2, 3, 4], 4);
      Atomics.store(header, WRITE_POS, 8 + 2 * (ring.byteLength - HEADER_BYTES));
      break;
    case "misaligned": // a write position between two records
      Atomics.store(header, WRITE_POS, 2);
      break;
    case "shared-oversized": { // a record for a chunk too large for the ring, sent as shared memory
      words[0] = -1;
      const shared = new Uint8Array(new SharedArrayBuffer(ring.byteLength));
      shared.fill(7);
      end.port.postMessage(shared);
      Atomics.store(header, WRITE_POS, 4);
      // Keeps changing the bytes it sent, as a peer sharing them could.
      setTimeout(() => shared.fill(9), 50);
      break;
    }
    case "oversized-flood": // 64 MiB on the side channel, with no record and no leave
      for (let i = 0; i < 64; i++) {
        const chunk = new Uint8Array(1024 * 1024);
        end.port.postMessage(chunk, [chunk.buffer]);
      }
      break;
  }
  Atomics.add(header, WRITE_SEQ, 1);
  Atomics.notify(header, WRITE_SEQ);
  self.postMessage("done");
};
