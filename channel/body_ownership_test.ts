// Who may change a body's bytes, and when. A codec's encodeView returns its own scratch memory,
// which its next call overwrites: the channel must copy such a view wherever it keeps the
// bytes past the synchronous write (a queued call, a frame too large for a batch). Raw bytes
// belong to the caller: the rules of channel.ts say when it may reuse them.

import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { rawCodec } from "../codecs/raw.ts";
import type { Codec } from "../codecs/types.ts";
import { heldRawChannel } from "./_test_scripted_transport.ts";
import { type TransportKind, transportKinds } from "../transports/_test_pairs.ts";
import { type Channel, type ChannelOptions, openChannel } from "./channel.ts";

/**
 * JSON through one scratch buffer: every `encodeView` first scribbles over everything the
 * previous one returned, so a view kept too long decodes as garbage (or not at all).
 */
class ScratchJsonCodec implements Codec<unknown> {
  readonly name = "scratch-json";
  views = 0;
  #scratch = new Uint8Array(64);
  readonly #utf8 = new TextEncoder();

  encode(value: unknown): Uint8Array {
    return this.#utf8.encode(JSON.stringify(value));
  }

  encodeView(value: unknown): Uint8Array {
    this.views++;
    this.#scratch.fill(0x21);
    const text = JSON.stringify(value);
    if (text.length * 3 > this.#scratch.length) this.#scratch = new Uint8Array(text.length * 3);
    const { written } = this.#utf8.encodeInto(text, this.#scratch);
    return this.#scratch.subarray(0, written);
  }

  decode(bytes: Uint8Array): unknown {
    return JSON.parse(new TextDecoder().decode(bytes));
  }
}

interface Api {
  echo(value: unknown): unknown;
  items(values: unknown[]): AsyncIterable<unknown>;
  collect(values: AsyncIterable<unknown>): Promise<unknown[]>;
  note(value: unknown): void;
  notes(): unknown[];
}

/** Strings large enough (300 KB) that their frames are written apart from any batch. */
const large = (tag: number): string => `${tag}:`.padEnd(300_000, String.fromCharCode(97 + tag));
const values = (count: number): unknown[] =>
  Array.from({ length: count }, (_, i) => i % 4 === 3 ? large(i % 26) : { i, text: `#${i}` });

async function connect(
  kind: TransportKind,
  server: Partial<ChannelOptions> = {},
  client: Partial<ChannelOptions> = {},
): Promise<{ client: Channel<Api>; codecs: ScratchJsonCodec[] } & AsyncDisposable> {
  const pair = await kind.pair();
  const codecs = [new ScratchJsonCodec(), new ScratchJsonCodec()];
  const noted: unknown[] = [];
  const [serverChannel, clientChannel] = await Promise.all([
    openChannel(pair.a, {
      codec: codecs[0],
      handlers: {
        echo: (value: unknown) => value,
        async *items(values: unknown[]) {
          yield* values;
        },
        async collect(values: AsyncIterable<unknown>) {
          return await Array.fromAsync(values);
        },
        note: (value: unknown) => void noted.push(value),
        notes: () => noted,
      },
      ...server,
    }),
    openChannel<Api>(pair.b, { codec: codecs[1], ...client }),
  ]);
  return {
    client: clientChannel,
    codecs,
    [Symbol.asyncDispose]: () => closeBoth(clientChannel, serverChannel, pair),
  };
}

/** Closes both ends, then what the transport pair holds. */
async function closeBoth(
  client: Channel<object>,
  server: Channel<object>,
  pair: { cleanup(): Promise<void> },
): Promise<void> {
  await Promise.all([client.close(), server.close()]);
  await pair.cleanup();
}

for (const kind of transportKinds) {
  const test = (name: string, fn: () => Promise<void>) =>
    Deno.test(`channel over ${kind.name}: ${name}`, fn);

  test("encodeView bodies: queued calls and large params and results arrive intact", async () => {
    // One call in flight at a time: the others wait in the queue with their bodies.
    await using pair = await connect(kind, {}, { maxInFlight: 1 });
    const sent = values(40);
    const results = await Promise.all(sent.map((value) => pair.client.remote.echo(value)));
    assert.deepEqual(results, sent);
    assert.ok(pair.codecs.every((codec) => codec.views >= sent.length), "encodeView was used");
  });

  test("encodeView bodies: many calls in flight, large and small mixed", async () => {
    await using pair = await connect(kind);
    const sent = values(40);
    assert.deepEqual(
      await Promise.all(sent.map((value) => pair.client.remote.echo(value))),
      sent,
    );
  });

  test("encodeView bodies: stream items both ways arrive intact", async () => {
    // A window of many items, so the producer runs ahead of the writes.
    const window = { streamWindowBytes: 16 << 20 };
    await using pair = await connect(kind, window, window);
    const sent = [...values(24), large(1), large(2), { i: -1 }, large(3)];
    assert.deepEqual(await Array.fromAsync(pair.client.remote.items(sent)), sent);
    const source = async function* () {
      yield* sent;
    };
    assert.deepEqual(await pair.client.remote.collect(source()), sent);
  });

  test("encodeView bodies: notifications arrive intact", async () => {
    await using pair = await connect(kind);
    const sent = values(24);
    for (const value of sent) pair.client.notify("note", value);
    assert.deepEqual(await pair.client.remote.notes(), sent);
  });
}

interface Bytes {
  blobs(count: number): AsyncIterable<Uint8Array>;
  fills(items: AsyncIterable<Uint8Array>): Promise<number[]>;
  note(bytes: Uint8Array): void;
  notes(): number[];
  tick(bytes: Uint8Array): void;
  shared(fill: number): Uint8Array;
}

// Past a batch, so written from the producer's own buffer, yet below the FrameWriter's
// high-water mark, so that its backpressure alone would not hold the producer back.
const ITEM_BYTES = 200_000;

/**
 * One buffer for every item, refilled the moment `yield` returns. With `busy`, each item
 * follows a burst of notifications on that channel, which keeps the receiver dispatching
 * while the item waits to be read.
 */
async function* reusing(count: number, busy?: Channel<Bytes>): AsyncGenerator<Uint8Array> {
  const buffer = new Uint8Array(ITEM_BYTES);
  const tick = new Uint8Array(8);
  for (let i = 1; i <= count; i++) {
    for (let n = 0; busy !== undefined && n < 2000; n++) busy.notify("tick", tick);
    buffer.fill(i);
    yield buffer;
    buffer.fill(0xff);
  }
}

/** The byte `bytes` is filled with, or -1 if it holds more than one value. */
function fillOf(bytes: Uint8Array): number {
  const first = bytes[0];
  for (let i = 1; i < bytes.length; i++) if (bytes[i] !== first) return -1;
  return first;
}

async function connectRaw(
  kind: TransportKind,
): Promise<{ client: Channel<Bytes> } & AsyncDisposable> {
  const pair = await kind.pair();
  const json = jsonCodec();
  const methodCodecs = {
    blobs: { param: json },
    fills: { result: json },
    notes: json,
    shared: { param: json },
  };
  // A window of many items, so that credit is not what holds a producer back.
  const options = { codec: rawCodec(), methodCodecs, streamWindowBytes: 64 << 20 };
  const noted: number[] = [];
  const shared = new Uint8Array(200_000);
  const [server, client] = await Promise.all([
    openChannel(pair.a, {
      ...options,
      handlers: {
        blobs: (count: number) => reusing(count),
        fills: async (items: AsyncIterable<Uint8Array>) =>
          (await Array.fromAsync(items)).map(fillOf),
        note: (bytes: Uint8Array) => void noted.push(fillOf(bytes)),
        notes: () => noted,
        tick: () => {},
        shared(fill: number) {
          shared.fill(fill);
          queueMicrotask(() => shared.fill(0xff));
          return shared;
        },
      },
    }),
    openChannel<Bytes>(pair.b, options),
  ]);
  return {
    client,
    [Symbol.asyncDispose]: () => closeBoth(client, server, pair),
  };
}

for (const kind of transportKinds) {
  const test = (name: string, fn: () => Promise<void>) =>
    Deno.test(`channel over ${kind.name}: ${name}`, fn);

  test("raw stream items: a producer may refill its one buffer once yield returns", async () => {
    await using pair = await connectRaw(kind);
    const expected = Array.from({ length: 16 }, (_, i) => i + 1);
    // Result stream: the items are kept until the end, so they must stay as they arrived.
    const items = await Array.fromAsync(pair.client.remote.blobs(expected.length));
    assert.deepEqual(items.map(fillOf), expected);
    // Param stream, also with the receiver kept busy.
    assert.deepEqual(await pair.client.remote.fills(reusing(expected.length)), expected);
    const busy = reusing(expected.length, pair.client);
    assert.deepEqual(await pair.client.remote.fills(busy), expected);
  });

  test("raw notifications and results: the sender may change the bytes at once", async () => {
    await using pair = await connectRaw(kind);
    const buffer = new Uint8Array(200_000);
    for (const fill of [1, 2, 3]) {
      pair.client.notify("note", buffer.fill(fill));
      buffer.fill(0xff);
    }
    assert.deepEqual(await pair.client.remote.notes(), [1, 2, 3]);
    for (const fill of [4, 5]) assert.equal(fillOf(await pair.client.remote.shared(fill)), fill);
  });
}

Deno.test("channel: a cancelled call settles only once the caller's own bytes are written", async () => {
  const { channel, transport, written } = await heldRawChannel();
  const param = new Uint8Array(200_000).fill(7);
  const controller = new AbortController();
  let settled = false;
  const call = channel.remote.sum(param, { signal: controller.signal }).catch((e) => e)
    .finally(() => settled = true);
  await new Promise((resolve) => setTimeout(resolve, 10));
  controller.abort(new Error("stop"));
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(settled, false, "the param is still being written");
  transport.release();
  assert.equal((await call as Error).message, "stop");
  param.fill(0xff);
  const sent = written.find((frame) => frame.kind === "call");
  assert.ok(sent?.kind === "call");
  assert.equal(fillOf(sent.body), 7);
  await channel.abort();
});
