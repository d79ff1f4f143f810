/**
 * A typed channel to a Web Worker, first over the Web Worker transport (postMessage,
 * transferred buffers), then over a shared-memory ring: the same API as with a subprocess,
 * with no `workers/` helper in between.
 *
 *   deno run --allow-read examples/threads_channel.ts
 *
 * @module
 */

import { openChannel } from "@conduit/ipc/channel";
import { msgpackCodec } from "@conduit/ipc/codecs/msgpack";
import { sharedRingPair, sharedRingTransport } from "@conduit/ipc/transports/shared_ring";
import { transfer, workerTransport } from "@conduit/ipc/transports/web_worker";
import type { Transport } from "@conduit/ipc/transports";
import { THREAD_METHOD_CODECS, type ThreadApi } from "./_thread_api.ts";

for (const kind of ["postMessage", "shared ring"] as const) {
  const worker = new Worker(new URL("./_thread_worker.ts", import.meta.url), { type: "module" });
  let transport: Transport;
  if (kind === "postMessage") {
    worker.postMessage("postMessage");
    transport = workerTransport(worker);
  } else {
    const [mine, theirs] = sharedRingPair();
    worker.postMessage(theirs, [theirs.port]);
    // Given the worker, the ring notices if it crashes or is terminated.
    transport = sharedRingTransport(mine, { worker });
  }
  const channel = await openChannel<ThreadApi>(transport, {
    codec: msgpackCodec(),
    methodCodecs: THREAD_METHOD_CODECS,
  });

  console.log(kind, "primes below 1e6:", await channel.remote.countPrimes(1_000_000)); // 78498
  const bytes = new Uint8Array(4 * 1024 * 1024).fill(1);
  console.log(kind, "checksum:", await channel.remote.checksum(transfer(bytes)));
  console.log(kind, "our copy after transfer:", bytes.length, "bytes"); // 0: moved
  const counted: number[] = [];
  for await (const n of channel.remote.countdown(3)) counted.push(n);
  console.log(kind, "countdown:", counted.join(", "));

  await channel.close();
  worker.terminate();
}
