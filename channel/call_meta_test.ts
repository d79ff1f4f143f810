// A call's key and attempt (docs/protocol.md §6, "Call meta"): what the caller sets, the
// handler sees; a peer that does not announce call-meta never receives it; a malformed meta
// is a protocol error.

import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { CALL_FLAG_META, callMetaBody } from "../protocol/format.ts";
import { memory, unix } from "../transports/_test_pairs.ts";
import { RawPeer } from "./_test_raw_peer.ts";
import type { CallContext } from "./call_context.ts";
import { openChannel } from "./channel.ts";

const codec = jsonCodec();
const utf8 = new TextEncoder();
const handlers = {
  seen: (_: null, ctx: CallContext) => ({ key: ctx.key ?? null, attempt: ctx.attempt }),
};

for (const kind of [memory, unix]) {
  Deno.test(`call meta (${kind.name}): the handler sees the caller's key and attempt`, async () => {
    const { a, b, cleanup } = await kind.pair();
    const [server, client] = await Promise.all([
      openChannel(a, { codec, handlers }),
      openChannel<typeof handlers>(b, { codec }),
    ]);
    assert.deepEqual(await client.remote.seen(null), { key: null, attempt: 1 });
    assert.deepEqual(await client.remote.seen(null, { key: "upload-7", attempt: 3 }), {
      key: "upload-7",
      attempt: 3,
    });
    assert.deepEqual(await client.remote.seen(null, { key: "k" }), { key: "k", attempt: 1 });
    await Promise.all([client.close(), server.closed]);
    await cleanup();
  });
}

Deno.test("call meta: a key or attempt out of range rejects the call before it is sent", async () => {
  const { a, b, cleanup } = await memory.pair();
  const [server, client] = await Promise.all([
    openChannel(a, { codec, handlers }),
    openChannel<typeof handlers>(b, { codec }),
  ]);
  for (const options of [{ key: "" }, { key: "k".repeat(129) }, { attempt: 0 }, { attempt: 1.5 }]) {
    await assert.rejects(client.remote.seen(null, options), RangeError, JSON.stringify(options));
  }
  assert.deepEqual(await client.remote.seen(null), { key: null, attempt: 1 });
  await Promise.all([client.close(), server.closed]);
  await cleanup();
});

Deno.test("call meta: a peer that does not announce call-meta gets the CALL without it", async () => {
  const { a, b, cleanup } = await memory.pair();
  const peer = new RawPeer(b);
  const opening = openChannel<{ m(p: null): null }>(a, { codec });
  await peer.handshake({ features: [] });
  const channel = await opening;
  const pending = channel.remote.m(null, { key: "k", attempt: 2 }).catch(() => {});
  const call = await peer.nextOf("call");
  assert.equal(call!.flags & CALL_FLAG_META, 0);
  assert.equal(call!.meta, undefined);
  await peer.close();
  await channel.close();
  await pending;
  await cleanup();
});

Deno.test("call meta: a peer that announces it gets the meta behind the flag", async () => {
  const { a, b, cleanup } = await memory.pair();
  const peer = new RawPeer(b);
  const opening = openChannel<{ m(p: null): null }>(a, { codec });
  await peer.handshake({ features: ["call-meta"] });
  const channel = await opening;
  const pending = channel.remote.m(null, { key: "k", attempt: 2 }).catch(() => {});
  const call = await peer.nextOf("call");
  assert.equal(call!.flags & CALL_FLAG_META, CALL_FLAG_META);
  assert.deepEqual(call!.meta, callMetaBody({ key: "k", attempt: 2 }));
  await peer.close();
  await channel.close();
  await pending;
  await cleanup();
});

Deno.test("call meta: a malformed meta from the peer is a protocol error; no handler runs", async () => {
  const manyHeaders = JSON.stringify({
    headers: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`h${i}`, "v"])),
  });
  for (
    const meta of [
      '{"attempt":0}',
      "[1]",
      '{"key":7}',
      "not json",
      '{"headers":[1]}',
      '{"headers":{"Upper":"x"}}',
      '{"headers":{"__proto__":"x"}}',
      '{"headers":{"a":7}}',
      '{"headers":{"a":"\\u0001"}}',
      '{"headers":{"a":"\u00e9"}}',
      manyHeaders,
    ]
  ) {
    let ran = false;
    const { a, b, cleanup } = await memory.pair();
    const peer = new RawPeer(b);
    const opening = openChannel(a, { codec, handlers: { m: () => ran = true } });
    await peer.handshake();
    const channel = await opening;
    await peer.send({
      kind: "call",
      id: 1,
      flags: 0,
      timeoutMs: 0,
      method: "m",
      body: utf8.encode("null"),
      meta: utf8.encode(meta),
    });
    const goodbye = await peer.goodbye();
    assert.equal(goodbye.code, "protocol_error", meta);
    assert.match(String(goodbye.reason), /meta/, meta);
    await channel.closed.catch(() => {});
    await peer.close();
    await cleanup();
    assert.equal(ran, false, meta);
  }
});

Deno.test("call meta: headers reach the handler; bad ones reject the call before it is sent", async () => {
  const seen = {
    headers: (_: null, ctx: CallContext) => ({ ...ctx.headers }),
  };
  const { a, b, cleanup } = await memory.pair();
  const [server, client] = await Promise.all([
    openChannel(a, { codec, handlers: seen }),
    openChannel<typeof seen>(b, { codec }),
  ]);
  assert.deepEqual(await client.remote.headers(null), {});
  const headers = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" };
  assert.deepEqual(await client.remote.headers(null, { headers }), headers);
  for (
    const bad of [
      { "Upper": "x" },
      { "": "x" },
      { "a": "line\nbreak" },
      { "a": "x".repeat(1025) },
      Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`h${i}`, "v"])),
      Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`h${i}`, "v".repeat(1000)])),
    ]
  ) {
    await assert.rejects(
      client.remote.headers(null, { headers: bad }),
      (error: Error) =>
        error instanceof RangeError && error.message.startsWith('The call to "headers": '),
    );
  }
  // The channel is still fine: a refused call never reached the wire.
  assert.deepEqual(await client.remote.headers(null, { headers: { a: "b" } }), { a: "b" });
  await Promise.all([client.close(), server.close()]);
  await cleanup();
});
