// Records sent by shape (docs/protocol.md §14): calls, streams and cancels carry shaped records
// over real transports, with bodies dropped on either side; a peer without the feature gets
// plain bodies; a hostile peer's SHAPE frames and bodies are protocol errors.

import assert from "node:assert/strict";
import { structuredCodec } from "../codecs/structured.ts";
import { STRUCTURED_EXT } from "../codecs/structured.ts";
import { ShapeDecoder, ShapeEncoder } from "../codecs/structured.ts";
import { encodeFrame } from "../framing/frame_decoder.ts";
import { decodeEnvelope, encodeEnvelope, type Envelope } from "../protocol/envelope.ts";
import { ProtocolError } from "../protocol/format.ts";
import { varintSize, writeVarint } from "../protocol/_frame_table.ts";
import { memory, unix } from "../transports/_test_pairs.ts";
import { helloBody, RawPeer } from "./_test_raw_peer.ts";
import type { CallContext } from "./call_context.ts";
import { openChannel } from "./channel.ts";
import { ConnectionClosedError } from "./errors.ts";

const row = (i: number, shape = "") => ({
  id: i,
  name: `item ${i}`,
  price: i * 1.5,
  tags: ["a", "b"],
  [`extra${shape}`]: shape === "" ? undefined : { nested: i, at: new Date(i) },
});
const rows = (n: number, shape = "") => Array.from({ length: n }, (_, i) => row(i, shape));
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const handlers = {
  echo: (value: unknown) => value,
  rows: (n: number) => rows(n),
  /** Answers after the caller gave up: its RESULT is dropped unread. */
  slowRows: async ([n, shape]: [number, string]) => {
    await delay(30);
    return rows(n, shape);
  },
  async *stream([n, shape]: [number, string]) {
    for (let i = 0; i < n; i++) {
      yield rows(2, `${shape}${i % 3}`);
      await delay(1);
    }
  },
  async sum(items: AsyncIterable<Array<{ price: number }>>) {
    let total = 0;
    for await (const batch of items) for (const item of batch) total += item.price;
    return total;
  },
  hold: async (ms: number, ctx: CallContext) => {
    await delay(ms);
    return ctx.method;
  },
};
type Api = typeof handlers;

for (const kind of [memory, unix]) {
  Deno.test(`shapes (${kind.name}): calls, streams and cancels carry shaped records`, async () => {
    const { a, b, cleanup } = await kind.pair();
    const lines: string[] = [];
    const [server, client] = await Promise.all([
      openChannel(a, { codec: structuredCodec(), handlers, maxInFlight: 2 }),
      openChannel<Api>(b, { codec: structuredCodec(), trace: (line) => lines.push(line) }),
    ]);
    const { remote } = client;
    assert.deepStrictEqual(await remote.echo(rows(5)), rows(5));
    assert.deepStrictEqual(await remote.echo(rows(5)), rows(5));
    assert.deepStrictEqual(await remote.rows(3), rows(3));

    // Results dropped unread: the caller cancelled. The SHAPE frames before them are read.
    for (let i = 0; i < 3; i++) {
      const abort = new AbortController();
      const late = remote.slowRows([4, "late"], { signal: abort.signal });
      await delay(5);
      abort.abort();
      await assert.rejects(late);
    }
    await delay(60);
    assert.deepStrictEqual(await remote.slowRows([4, "late"]), rows(4, "late"));

    // Stream items after a cancel, dropped unread; then the same shapes, read.
    const abort = new AbortController();
    let seen = 0;
    await assert.rejects(async () => {
      for await (const batch of remote.stream([50, "s"], { signal: abort.signal })) {
        assert.deepStrictEqual(batch, rows(2, `s${seen % 3}`));
        if (++seen === 2) abort.abort();
      }
    });
    const all = [];
    for await (const batch of remote.stream([6, "s"])) all.push(batch);
    assert.deepStrictEqual(all, Array.from({ length: 6 }, (_, i) => rows(2, `s${i % 3}`)));

    // Params never sent: queued behind the peer's maxInFlight (2), then cancelled.
    const holding = [remote.hold(80), remote.hold(80)];
    for (let i = 0; i < 2; i++) {
      const queued = new AbortController();
      const dropped = remote.echo(rows(3, "queued"), { signal: queued.signal });
      queued.abort();
      await assert.rejects(dropped);
    }
    await Promise.all(holding);
    assert.deepStrictEqual(await remote.echo(rows(3, "queued")), rows(3, "queued"));

    // A stream param of shaped records.
    async function* batches() {
      for (let i = 0; i < 5; i++) yield rows(3);
    }
    assert.equal(await remote.sum(batches()), 5 * rows(3).reduce((t, r) => t + r.price, 0));

    await Promise.all([client.close(), server.closed]);
    await cleanup();
    const shapes = lines.filter((line) => line.includes(" SHAPE "));
    assert.ok(shapes.some((line) => line.startsWith("conduit → SHAPE")), shapes.join("\n"));
    assert.ok(shapes.some((line) => line.startsWith("conduit ← SHAPE")), shapes.join("\n"));
    // Each shape is defined once per direction.
    const ids = shapes.map((line) => line.split(" ").slice(1, 4).join(" "));
    assert.equal(new Set(ids).size, ids.length, ids.join("\n"));
  });
}

Deno.test("shapes: shaped bodies are smaller; shapes: false sends the codec's plain bodies", async () => {
  const sizes: Record<string, number> = {};
  for (const shapes of [true, false]) {
    const { a, b, cleanup } = await memory.pair();
    const lines: string[] = [];
    const [server, client] = await Promise.all([
      openChannel(a, { codec: structuredCodec(), handlers }),
      openChannel<Api>(b, { codec: structuredCodec(), shapes, trace: (l) => lines.push(l) }),
    ]);
    for (let i = 0; i < 3; i++) assert.deepStrictEqual(await client.remote.rows(10), rows(10));
    await Promise.all([client.close(), server.closed]);
    await cleanup();
    assert.equal(lines[0].includes('"shapes"'), shapes, lines[0]);
    assert.equal(lines.some((l) => l.includes(" SHAPE ")), shapes);
    const last = lines.filter((l) => l.startsWith("conduit ← RESULT")).at(-1)!;
    sizes[String(shapes)] = Number(/RESULT #\d+ (\d+) B/.exec(last)![1]);
  }
  assert.ok(sizes.true < sizes.false * 0.7, JSON.stringify(sizes));
});

Deno.test("shapes: a peer whose HELLO does not list the feature gets plain bodies", async () => {
  const { a, b, cleanup } = await memory.pair();
  const peer = new RawPeer(b);
  const opening = openChannel<Api>(a, { codec: structuredCodec() });
  const hello = await peer.handshake({ codec: "structured", features: ["call-meta"] });
  assert.deepEqual(
    JSON.parse(new TextDecoder().decode((hello as { body: Uint8Array }).body)).features,
    [
      "call-meta",
      "shapes",
    ],
  );
  const channel = await opening;
  const plain = structuredCodec();
  for (let id = 1; id <= 3; id++) {
    const pending = channel.remote.echo(rows(4));
    const frame = await peer.next();
    assert.equal(frame?.kind, "call", "no SHAPE frame");
    const call = frame as { id: number; body: Uint8Array };
    assert.deepStrictEqual(plain.decode(call.body), rows(4));
    await peer.send({ kind: "result", id: call.id, body: plain.encode(rows(4)) });
    assert.deepStrictEqual(await pending, rows(4));
  }
  await peer.close();
  await channel.closed.catch(() => {});
  await cleanup();
});

Deno.test("shapes: bodies the caller drops unread still leave their SHAPE frames read", async () => {
  const { channel, peer, cleanup } = await hostile();
  const codec = structuredCodec();
  const table = new ShapeEncoder();
  /** Sends a body the way conduit does: the definitions it needs, then the frame. */
  const send = async (frame: (body: Uint8Array) => Envelope, value: unknown) => {
    const body = codec.encodeShaped(value, table).slice();
    for (const shape of table.uncommitted()) {
      if (table.commit(shape)) {
        await peer.send({ kind: "shape", id: shape.id, keys: [...shape.keys] });
      }
    }
    await peer.send(frame(body));
  };
  // A RESULT that crosses the caller's CANCEL: dropped, its shape defined.
  const abort = new AbortController();
  const cancelled = channel.remote.rows(4, { signal: abort.signal });
  const first = await peer.nextOf("call");
  abort.abort();
  await assert.rejects(cancelled);
  await peer.nextOf("cancel");
  await send((body) => ({ kind: "result", id: first!.id, body }), rows(4));
  // Stream items after a cancel: dropped, their shapes defined.
  const streamAbort = new AbortController();
  const stream = channel.remote.stream([9, "d"], { signal: streamAbort.signal });
  const iterator = stream[Symbol.asyncIterator]();
  const next = iterator.next();
  const second = await peer.nextOf("call");
  await send((body) => ({ kind: "data", id: second!.id, receiverId: true, body }), rows(2, "d"));
  assert.deepStrictEqual((await next).value, rows(2, "d"));
  streamAbort.abort();
  await peer.nextOf("cancel");
  await send((body) => ({ kind: "data", id: second!.id, receiverId: true, body }), rows(2, "e"));
  await send((body) => ({ kind: "data", id: second!.id, receiverId: true, body }), rows(2, "e"));
  await peer.send({ kind: "end", id: second!.id, receiverId: true });
  await iterator.return?.();
  // Later bodies use those shapes without defining them again.
  for (const value of [rows(4), rows(3, "e")]) {
    const pending = channel.remote.echo(value);
    const call = await peer.nextOf("call");
    await send((body) => ({ kind: "result", id: call!.id, body }), value);
    assert.equal(table.uncommitted().length, 0, "no new definition needed");
    assert.deepStrictEqual(await pending, value);
  }
  await peer.close();
  await channel.closed.catch(() => {});
  await cleanup();
});

/** Opens a channel against a raw peer that lists the shapes feature. */
async function hostile(): Promise<{
  channel: Awaited<ReturnType<typeof openChannel<Api>>>;
  peer: RawPeer;
  cleanup: () => Promise<void>;
}> {
  const { a, b, cleanup } = await memory.pair();
  const peer = new RawPeer(b);
  const opening = openChannel<Api>(a, { codec: structuredCodec(), handlers });
  await peer.handshake({ codec: "structured", features: ["shapes"] });
  return { channel: await opening, peer, cleanup };
}

async function failsWith(
  channel: { closed: Promise<void> },
  peer: RawPeer,
  message: string,
): Promise<void> {
  const error = await channel.closed.then(() => assert.fail("closed cleanly"), (e) => e);
  assert.ok(error instanceof ConnectionClosedError, String(error));
  assert.ok(error.cause instanceof ProtocolError, String(error.cause));
  assert.equal(error.cause.message, message);
  const goodbye = await peer.goodbye();
  assert.equal(goodbye.code, "protocol_error");
  assert.equal(goodbye.reason, message);
}

/** `[ext R, [ext K(id), ...values]]`: a body with one record of shape `id`. */
function shapedBody(id: number, values: number[]): Uint8Array {
  return new Uint8Array([
    0x92,
    0xc7,
    0,
    STRUCTURED_EXT.revive,
    0x90 + values.length + 1,
    0xd4,
    STRUCTURED_EXT.shape,
    id,
    ...values,
  ]);
}

Deno.test("shapes: a body using a shape never defined is a protocol error; calls settle", async () => {
  const { channel, peer, cleanup } = await hostile();
  const pending = channel.remote.echo(1);
  const call = await peer.nextOf("call");
  await peer.send({ kind: "shape", id: 0, keys: ["a"] });
  await peer.send({ kind: "result", id: call!.id, body: shapedBody(7, [1]) });
  await assert.rejects(pending);
  await failsWith(channel, peer, "A body uses shape 7, which the peer never defined");
  await peer.close();
  await cleanup();
});

Deno.test("shapes: a shape that breaks a limit is a protocol error naming it", async () => {
  const cases: Array<[(peer: RawPeer) => Promise<void>, string]> = [
    [
      (peer) => peer.send({ kind: "shape", id: 5000, keys: ["a"] }),
      "Shape id 5000 is outside the table: ids are below maxShapes (1024)",
    ],
    [
      (peer) =>
        peer.send({ kind: "shape", id: 0, keys: Array.from({ length: 65 }, (_, i) => `k${i}`) }),
      "Shape 0 has 65 keys, where a shape has 1 to maxKeysPerShape (64)",
    ],
    [
      (peer) => peer.send({ kind: "shape", id: 0, keys: ["k".repeat(129)] }),
      "Shape 0 has a key of 129 bytes, over maxKeyBytes (128)",
    ],
    [
      async (peer) => {
        // 64 keys of 128 bytes: 8 KiB a shape, 8 shapes fill the 64 KiB table.
        for (let id = 0; id < 9; id++) {
          const keys = Array.from({ length: 64 }, (_, i) => `${id}:${i}:`.padEnd(128, "x"));
          await peer.send({ kind: "shape", id, keys });
        }
      },
      "Shape 8 takes the table to 73728 key bytes, over maxTableBytes (65536)",
    ],
    [
      async (peer) => {
        await peer.send({ kind: "shape", id: 3, keys: ["a"] });
        await peer.send({ kind: "shape", id: 3, keys: ["b"] });
      },
      "Shape 3 is defined twice",
    ],
  ];
  for (const [send, message] of cases) {
    const { channel, peer, cleanup } = await hostile();
    await send(peer);
    await failsWith(channel, peer, message);
    await peer.close();
    await cleanup();
  }
});

/** A SHAPE frame of shape 0 saying `count` keys: the first not UTF-8, the others empty. */
function shapeOfCount(count: number): Uint8Array {
  const frame = new Uint8Array(2 + varintSize(count) + 1 + count);
  frame[0] = 0x06; // SHAPE; frame[1] = 0 is its id
  const at = writeVarint(frame, 2, count);
  frame[at] = 1; // the first key: one byte,
  frame[at + 1] = 0xff; // not UTF-8; the others have length 0
  return encodeFrame(frame);
}

Deno.test("shapes: a SHAPE frame is refused on its key count, before any key is read", async () => {
  // A peer's count costs nothing: no key is decoded (the first one is not UTF-8) when the
  // count is over the limit, or when the feature was not negotiated.
  for (const count of [65, 4 * 1024 * 1024]) {
    const { channel, peer, cleanup } = await hostile();
    await peer.sendBytes(shapeOfCount(count));
    const message = `Shape 0 has ${count} keys, where a shape has 1 to maxKeysPerShape (64)`;
    await failsWith(channel, peer, message);
    await peer.close();
    await cleanup();
  }
  await refusedWithoutShapes((peer) => peer.sendBytes(shapeOfCount(4 * 1024 * 1024)));
});

Deno.test("shapes: a SHAPE key over maxKeyBytes is refused before any key is decoded", async () => {
  // One key of 1 MiB that is not UTF-8: decoded first, it was refused for its bytes, after
  // turning a frame's worth of them into text.
  const length = 1 << 20;
  const frame = new Uint8Array(2 + 1 + varintSize(length) + length).fill(0xff);
  frame[0] = 0x06; // SHAPE; id 0
  frame[1] = 0;
  frame[2] = 1; // one key
  writeVarint(frame, 3, length);
  const { channel, peer, cleanup } = await hostile();
  await peer.sendBytes(encodeFrame(frame));
  await failsWith(channel, peer, `Shape 0 has a key of ${length} bytes, over maxKeyBytes (128)`);
  await peer.close();
  await cleanup();
});

/** Opens a channel whose peer's HELLO lists no shapes, lets `send` send, expects the refusal. */
async function refusedWithoutShapes(send: (peer: RawPeer) => Promise<void>): Promise<void> {
  const { a, b, cleanup } = await memory.pair();
  const peer = new RawPeer(b);
  const opening = openChannel(a, { codec: structuredCodec() });
  await peer.send({ kind: "hello", body: helloBody({ codec: "structured" }) });
  const channel = await opening;
  await send(peer);
  await failsWith(
    channel,
    peer,
    'A SHAPE frame (shape 0), but the "shapes" feature was not negotiated (both HELLOs must list it)',
  );
  await peer.close();
  await cleanup();
}

Deno.test("shapes: SHAPE before HELLO, or without the feature, is a protocol error", async () => {
  {
    const { a, b, cleanup } = await memory.pair();
    const peer = new RawPeer(b);
    const opening = openChannel(a, { codec: structuredCodec() });
    await peer.send({ kind: "shape", id: 0, keys: ["a"] });
    const error = await opening.catch((e) => e);
    assert.match(String(error), /The first frame was SHAPE, not HELLO/);
    assert.equal((await peer.goodbye()).code, "protocol_error");
    await peer.close();
    await cleanup();
  }
  await refusedWithoutShapes((peer) => peer.send({ kind: "shape", id: 0, keys: ["a"] }));
});

Deno.test("shapes: the vectors of docs/protocol.md §14 are conduit's bytes both ways", async () => {
  const doc = await Deno.readTextFile(new URL("../docs/protocol.md", import.meta.url));
  const section = doc.slice(doc.indexOf("## 14. Record shapes"), doc.indexOf("## Appendix A"));
  const lines = section.split("\n").filter((line) => line.startsWith("handler → caller "));
  assert.equal(lines.length, 3);
  const vectors = lines.map((line) => {
    const [header, payload, meaning] = line.replace(/^.*?→ \w+\s+/, "").split(/\s{2,}/);
    return { hex: `${header}${payload}`.replace(/ /g, ""), meaning };
  });
  const hex = (bytes: Uint8Array) =>
    Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  const values = vectors
    .filter((v) => v.meaning.startsWith("RESULT"))
    .map((v) => JSON.parse(v.meaning.replace(/^.*? body=/, "")));
  // The sending side: conduit's encoder makes exactly these frames.
  const codec = structuredCodec();
  const sending = new ShapeEncoder();
  const sent: string[] = [];
  values.forEach((value, i) => {
    const body = codec.encodeShaped(value, sending).slice();
    for (const shape of sending.uncommitted()) {
      if (sending.commit(shape)) {
        sent.push(
          hex(encodeFrame(encodeEnvelope({ kind: "shape", id: shape.id, keys: [...shape.keys] }))),
        );
      }
    }
    sent.push(hex(encodeFrame(encodeEnvelope({ kind: "result", id: i + 1, body }))));
  });
  assert.deepEqual(sent, vectors.map((v) => v.hex));
  // The receiving side: each frame decodes to its meaning.
  const receiving = new ShapeDecoder();
  let result = 0;
  for (const { hex: frameHex, meaning } of vectors) {
    const bytes = new Uint8Array(frameHex.match(/../g)!.map((b) => parseInt(b, 16)));
    const envelope = decodeEnvelope(bytes.subarray(4));
    if (envelope.kind === "shape") {
      assert.equal(meaning, `SHAPE id=${envelope.id} keys=${JSON.stringify(envelope.keys)}`);
      receiving.define(envelope.id, envelope.keys);
    } else {
      assert.equal(envelope.kind, "result");
      assert.deepStrictEqual(codec.decodeShaped(envelope.body, receiving), values[result++]);
    }
  }
});
