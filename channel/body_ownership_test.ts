// Who may change a body's bytes, and when. A codec's encodeView returns its own scratch memory,
// which its next call overwrites: the channel must copy such a view wherever it keeps the
// bytes past the synchronous write (a queued call, a frame too large for a batch). Raw bytes
// belong to the caller: the rules of channel.ts say when it may reuse them.

import assert from "node:assert/strict";
import type { Codec } from "../codecs/types.ts";
import { type TransportKind, transportKinds } from "./_test_transports.ts";
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
    async [Symbol.asyncDispose]() {
      await Promise.all([clientChannel.close(), serverChannel.close()]);
      await pair.cleanup();
    },
  };
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
