// Records sent by shape (docs/protocol.md §14) on a channel: the structured codec's echo of a
// small call and of 1 KB of records over a Unix socket pair in this process, with the
// `shapes` option on (the default) and off. The cases with shapes on measure the messages
// after the first (whose shapes are then defined both ways).
//
//   deno bench -A bench/shapes_bench.ts

import { openChannel } from "../channel/mod.ts";
import { structuredCodec } from "../codecs/structured.ts";
import { connectUnix, listenUnix } from "../transports/unix.ts";
import { benchBatch, benchPayloads } from "./_codec_payloads.ts";

const small = benchPayloads()[0].value;
const kb = benchBatch(1_000);
const handlers = { echo: (value: unknown) => value };

for (const shapes of [false, true]) {
  const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "shapes_bench" });
  const listener = await listenUnix(`${dir}/s`);
  const accepted = listener.accept();
  const a = await connectUnix(`${dir}/s`);
  const b = await accepted;
  await listener.close();
  const [, client] = await Promise.all([
    openChannel(b, { codec: structuredCodec(), handlers, shapes }),
    openChannel<typeof handlers>(a, { codec: structuredCodec(), shapes }),
  ]);
  for (const [name, value] of [["small", small], ["1KB", kb]] as const) {
    await client.remote.echo(value);
    Deno.bench({
      name: `channel/unix structured ${name} echo, shapes ${shapes ? "on" : "off"}`,
      group: `structured ${name} echo`,
      baseline: !shapes,
      fn: async () => void await client.remote.echo(value),
    });
  }
}
