// Streams 1 GiB through a deliberately slow consumer over one transport kind and prints, as
// JSON, what arrived and the peak RSS growth. Run by stream_large_test.ts in a process of its
// own, so the RSS it reads belongs to this stream alone and not to tests running beside it.
//
//   deno run -A channel/_testdata/large_stream.ts memory|unix

import { jsonCodec } from "../../codecs/json.ts";
import { rawCodec } from "../../codecs/raw.ts";
import { transportKinds } from "../../transports/_test_pairs.ts";
import { openChannel } from "../channel.ts";

const ITEM_BYTES = 1024 * 1024;
const ITEMS = 1024; // 1 GiB

interface Blobs {
  blobs(count: number): AsyncIterable<Uint8Array>;
}

/** The outcome, printed as one JSON line. */
export interface LargeStreamReport {
  items: number;
  bytes: number;
  inOrder: boolean;
  hashMatches: boolean;
  peakRssGrowth: number;
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

const kind = transportKinds.find((k) => k.name === Deno.args[0]);
if (!kind) throw new TypeError(`unknown transport kind ${Deno.args[0]}`);

let producedHash = 0;
const pair = await kind.pair();
const methodCodecs = { blobs: { result: rawCodec() } };
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
let inOrder = true;
for await (const item of client.remote.blobs(ITEMS, { timeout: Infinity })) {
  if (new DataView(item.buffer, item.byteOffset).getUint32(0) !== received) inOrder = false;
  consumedHash = fold(consumedHash, item);
  received++;
  bytes += item.byteLength;
  if (received % 8 === 0) {
    peak = Math.max(peak, Deno.memoryUsage().rss - baseline);
    // The slow part: the producer could go much faster than this.
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
await Promise.all([client.close(), server.close()]);
await pair.cleanup();
const report: LargeStreamReport = {
  items: received,
  bytes,
  inOrder,
  hashMatches: consumedHash === producedHash,
  peakRssGrowth: peak,
};
console.log(JSON.stringify(report));
