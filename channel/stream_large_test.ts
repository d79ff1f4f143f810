// 1 GiB through a deliberately slow consumer: credit-based flow control must bound the memory
// the producer can make either side hold, and every byte must arrive once, in order.

import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { rawCodec } from "../codecs/raw.ts";
import { transportKinds } from "./_test_transports.ts";
import { openChannel } from "./channel.ts";

const ITEM_BYTES = 1024 * 1024;
const ITEMS = 1024; // 1 GiB
const MEMORY_BOUND = 256 * 1024 * 1024;

interface Blobs {
  blobs(count: number): AsyncIterable<Uint8Array>;
}

/** Folds an item into a running hash that changes if any item is lost, repeated or reordered. */
function fold(hash: number, item: Uint8Array): number {
  // A decoded item is a view into a transport chunk, at any offset.
  if (item.byteOffset % 4 !== 0) item = item.slice();
  const words = new Int32Array(item.buffer, item.byteOffset, item.byteLength >> 2);
  let sum = 0;
  let xor = 0;
  for (let i = 0; i < words.length; i++) {
    sum = (sum + words[i]) | 0;
    xor ^= words[i];
  }
  return Math.imul(hash ^ sum, 0x01000193) ^ Math.imul(xor, 0x5bd1e995) ^ item.byteLength;
}

function makeItem(index: number): Uint8Array {
  const item = new Uint8Array(ITEM_BYTES);
  item.fill((index * 131) & 0xff);
  new DataView(item.buffer).setUint32(0, index);
  new DataView(item.buffer).setUint32(ITEM_BYTES - 4, ~index);
  return item;
}

for (const kind of transportKinds) {
  Deno.test(`channel over ${kind.name}: 1 GiB stream to a slow consumer stays within the credit window`, async () => {
    let producedHash = 0;
    const pair = await kind.pair();
    const methodCodecs = { blobs: { result: rawCodec } };
    const [server, client] = await Promise.all([
      openChannel(pair.a, {
        codec: jsonCodec(),
        methodCodecs,
        handlers: {
          async *blobs(count: number) {
            for (let i = 0; i < count; i++) {
              const item = makeItem(i);
              producedHash = fold(producedHash, item);
              yield item;
            }
          },
        },
      }),
      openChannel<Blobs>(pair.b, { codec: jsonCodec(), methodCodecs }),
    ]);

    const baseline = Deno.memoryUsage().rss;
    let peak = 0;
    let consumedHash = 0;
    let received = 0;
    let bytes = 0;
    for await (const item of client.remote.blobs(ITEMS, { timeout: Infinity })) {
      assert.equal(new DataView(item.buffer, item.byteOffset).getUint32(0), received);
      consumedHash = fold(consumedHash, item);
      received++;
      bytes += item.byteLength;
      if (received % 8 === 0) {
        peak = Math.max(peak, Deno.memoryUsage().rss - baseline);
        // The slow part: the producer could go much faster than this.
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    }
    assert.equal(received, ITEMS);
    assert.equal(bytes, ITEMS * ITEM_BYTES);
    assert.equal(consumedHash, producedHash);
    assert.ok(
      peak < MEMORY_BOUND,
      `rss grew by ${(peak / 2 ** 20).toFixed(0)} MiB while streaming 1 GiB (bound 256 MiB)`,
    );
    await Promise.all([client.close(), server.close()]);
    await pair.cleanup();
  });
}
