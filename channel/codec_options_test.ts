// The codec options: JSON when none is given (the documented default of a plain channel), and
// a TypeError naming the option for a value that is not a codec object, above all a codec
// factory passed uncalled (`rawCodec` for `rawCodec()`), refused when the channel or the
// server is made rather than failing every call later.

import assert from "node:assert/strict";
import { rawCodec } from "../codecs/raw.ts";
import { memoryPair } from "../transports/memory.ts";
import { connectUnix, listenUnix } from "../transports/unix.ts";
import { type ChannelOptions, openChannel } from "./channel.ts";
import { serve } from "./serve.ts";
import { openJsonRpc } from "../jsonrpc/mod.ts";

const handlers = { add: ({ a, b }: { a: number; b: number }) => a + b };

Deno.test("codec: a channel opened without one speaks JSON", async () => {
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openChannel(a, { handlers }),
    openChannel<typeof handlers>(b, {}),
  ]);
  assert.equal(await client.remote.add({ a: 1, b: 2 }), 3);
  assert.equal(client.peer?.codec, "json");
  await Promise.all([client.close(), server.closed]);
});

Deno.test("codec: serve() without one speaks JSON", async () => {
  const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
  const server = serve(await listenUnix(`${dir}/s`), { handlers });
  const client = await openChannel<typeof handlers>(await connectUnix(`${dir}/s`));
  assert.equal(await client.remote.add({ a: 2, b: 3 }), 5);
  // With no options at all, too.
  const bare = serve(await listenUnix(`${dir}/t`));
  const other = await openChannel(await connectUnix(`${dir}/t`));
  assert.equal(other.peer?.codec, "json");
  await bare.close();
  await other.closed;
  await server.close();
  await client.closed;
  await Deno.remove(dir, { recursive: true });
});

/** `options` with a value where a codec belongs, past the type checker. */
function loose(options: Record<string, unknown>): ChannelOptions {
  return options as ChannelOptions;
}

Deno.test("codec: a codec factory passed uncalled is refused at open, naming the option", async () => {
  const cases: [Record<string, unknown>, string][] = [
    [
      { codec: rawCodec },
      "codec must be a codec object, got the function rawCodec: pass rawCodec(), not rawCodec",
    ],
    [
      { methodCodecs: { blob: rawCodec } },
      'methodCodecs["blob"] must be a codec object, got the function rawCodec: ' +
      "pass rawCodec(), not rawCodec",
    ],
    [
      { methodCodecs: { blob: { result: rawCodec } } },
      'methodCodecs["blob"].result must be a codec object, got the function rawCodec: ' +
      "pass rawCodec(), not rawCodec",
    ],
    [
      { methodCodecs: { blob: { param: rawCodec(), result: rawCodec } } },
      'methodCodecs["blob"].result must be a codec object, got the function rawCodec: ' +
      "pass rawCodec(), not rawCodec",
    ],
    [
      { codec: { name: "json" } },
      "codec must be a codec (an object with name, encode and decode, such as jsonCodec()), " +
      "got an object with name",
    ],
    [
      { codec: "json" },
      "codec must be a codec (an object with name, encode and decode, such as jsonCodec()), " +
      "got json",
    ],
  ];
  for (const [options, message] of cases) {
    const [a, b] = memoryPair();
    await assert.rejects(openChannel(a, loose(options)), { name: "TypeError", message });
    await Promise.all([a.abort(), b.abort()]);
  }
});

Deno.test("codec: serve() refuses a codec factory passed uncalled before it accepts", async () => {
  const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
  const listener = await listenUnix(`${dir}/s`);
  assert.throws(() => serve(listener, { handlers, ...loose({ codec: rawCodec }) }), {
    name: "TypeError",
    message:
      "codec must be a codec object, got the function rawCodec: pass rawCodec(), not rawCodec",
  });
  await listener.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("open: options refused at open let the transport go, as a failed handshake does", async () => {
  // The caller handed the transport over (often `openChannel(await connectTcp(…), …)`): left
  // open, the peer held the connection until its own handshake timeout.
  const opens = [
    (t: Parameters<typeof openChannel>[0]) => openChannel(t, { maxInFlight: 0 }),
    (t: Parameters<typeof openChannel>[0]) => openChannel(t, { auth: { secret: "short" } }),
    (t: Parameters<typeof openChannel>[0]) =>
      openJsonRpc(t, { framing: "lines" as "ndjson", handlers: {} }),
  ];
  for (const open of opens) {
    const [a, b] = memoryPair();
    await assert.rejects(open(a), (e) => e instanceof TypeError || e instanceof RangeError);
    // The peer's end sees the connection end.
    const read = await b.readable.getReader().read();
    assert.equal(read.done, true);
    await b[Symbol.asyncDispose]();
  }
});
