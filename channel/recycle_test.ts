// Channel.recycle: a received item's memory handed back is reused for later frames, and never
// while anything the application still holds lies in it.

import assert from "node:assert/strict";
import { rawCodec } from "../codecs/raw.ts";
import { holdsPattern, pattern } from "../framing/_test_util.ts";
import { tcp, type TransportKind, transportKinds, unix } from "../transports/_test_pairs.ts";
import { type Channel, openChannel } from "./channel.ts";
import type { CallContext } from "./call_context.ts";

const MIB = 1024 * 1024;

interface Api {
  /** Item i of `count[0]` items of `count[1]` MiB each holds pattern(i). */
  blobs(count: Uint8Array): AsyncIterable<Uint8Array>;
  /** Item i of `count[0]` items of `count[1]` KiB each holds pattern(i). */
  kibBlobs(count: Uint8Array): AsyncIterable<Uint8Array>;
  echo(bytes: Uint8Array): Uint8Array;
  /** Recycles its param: [whether it was taken, the param's length afterwards / 1 KiB]. */
  recycleParam(bytes: Uint8Array): Uint8Array;
}

async function connect(
  kind: TransportKind,
): Promise<{ client: Channel<Api> } & AsyncDisposable> {
  const pair = await kind.pair();
  const handlers = {
    async *blobs([count, mib]: Uint8Array) {
      for (let i = 0; i < count; i++) yield pattern(i, mib * MIB);
    },
    async *kibBlobs([count, kib]: Uint8Array) {
      for (let i = 0; i < count; i++) yield pattern(i, kib * 1024);
    },
    echo: (bytes: Uint8Array) => bytes,
    recycleParam: (bytes: Uint8Array, ctx: CallContext) =>
      new Uint8Array([ctx.channel.recycle(bytes) ? 1 : 0, bytes.length / 1024]),
  };
  const [server, client] = await Promise.all([
    openChannel(pair.a, { codec: rawCodec(), handlers }),
    openChannel<Api>(pair.b, { codec: rawCodec() }),
  ]);
  return {
    client,
    [Symbol.asyncDispose]: async () => {
      await Promise.all([client.close(), server.close()]);
      await pair.cleanup();
    },
  };
}

for (const kind of transportKinds) {
  const test = (name: string, fn: () => Promise<void>) =>
    Deno.test(`channel over ${kind.name}: ${name}`, fn);

  test("recycle: 1 MiB stream items handed back are taken, and every item arrives intact", async () => {
    await using pair = await connect(kind);
    const count = 32;
    let i = 0;
    let taken = 0;
    for await (const item of pair.client.remote.blobs(new Uint8Array([count, 1]))) {
      assert.ok(holdsPattern(item, i, MIB), `item ${i} holds its own bytes`);
      if (pair.client.recycle(item)) {
        taken++;
        assert.equal(item.length, 0, "a recycled item is detached");
        assert.equal(pair.client.recycle(item), false, "recycled already");
      }
      i++;
    }
    assert.equal(i, count);
    // The first items may arrive inside a larger read (views of a shared buffer, refused).
    assert.ok(taken >= count - 2, `${taken} of ${count} items recycled`);
  });

  test("recycle: items kept while the others are recycled are never overwritten", async () => {
    await using pair = await connect(kind);
    const kept: Array<[Uint8Array, number]> = [];
    let i = 0;
    for await (const item of pair.client.remote.blobs(new Uint8Array([24, 1]))) {
      assert.ok(holdsPattern(item, i, MIB), `item ${i} holds its own bytes`);
      if (i % 3 === 0) kept.push([item, i]);
      else pair.client.recycle(item);
      i++;
    }
    assert.equal(kept.length, 8);
    for (const [item, i] of kept) assert.ok(holdsPattern(item, i, MIB), `kept item ${i}`);
  });

  test("recycle: a large param or result can be recycled; small and foreign bytes are refused", async () => {
    await using pair = await connect(kind);
    const client = pair.client;
    // The handler's param: taken and detached on the serving side.
    assert.deepEqual(await client.remote.recycleParam(pattern(1, MIB)), new Uint8Array([1, 0]));
    // Below 64 KiB the bytes are a view of a buffer other frames share: refused, unchanged.
    assert.deepEqual(await client.remote.recycleParam(pattern(2, 4096)), new Uint8Array([0, 4]));
    const result = await client.remote.echo(pattern(3, MIB));
    assert.ok(holdsPattern(result, 3, MIB));
    assert.equal(client.recycle(result), true);
    const small = await client.remote.echo(pattern(4, 1000));
    assert.equal(client.recycle(small), false);
    assert.ok(holdsPattern(small, 4, 1000));
    const foreign = pattern(5, MIB);
    assert.equal(client.recycle(foreign), false);
    assert.ok(holdsPattern(foreign, 5, MIB));
    // Calls after recycling still see their own bytes.
    for (let i = 6; i < 10; i++) {
      const echoed = await client.remote.echo(pattern(i, MIB));
      assert.ok(holdsPattern(echoed, i, MIB), `echo ${i}`);
      client.recycle(echoed);
    }
  });
}

// Where the channel reads into buffers of its choosing (a socket's reads), not where a
// transport hands over chunks as they were written (in memory, NATS).
for (const kind of [unix, tcp]) {
  Deno.test(`channel over ${kind.name}: recycle: 64 KiB stream items, several to a read, are taken too once they are handed back`, async () => {
    await using pair = await connect(kind);
    const count = 60;
    const bytes = 64 * 1024;
    let i = 0;
    let taken = 0;
    for await (const item of pair.client.remote.kibBlobs(new Uint8Array([count, 64]))) {
      assert.ok(holdsPattern(item, i, bytes), `item ${i} holds its own bytes`);
      if (pair.client.recycle(item)) taken++;
      i++;
    }
    assert.equal(i, count);
    // The items read before the first was handed back are views of a shared read buffer
    // (refused); from then on each is read into a buffer of its own, which serves again.
    assert.ok(taken >= count - 8, `${taken} of ${count} items recycled`);
  });

  // Items kept, not handed back: once a read shows large frames coming back to back, each is
  // read into a buffer of its own, so a kept item holds its own frame's memory and no more
  // (as a view it would keep alive the whole 256 KiB read buffer it shares with others).
  Deno.test(`channel over ${kind.name}: 64 KiB stream items back to back each come in a buffer of their own, kept or not`, async () => {
    await using pair = await connect(kind);
    const count = 60;
    const bytes = 64 * 1024;
    const kept: Uint8Array[] = [];
    for await (const item of pair.client.remote.kibBlobs(new Uint8Array([count, 64]))) {
      kept.push(item);
    }
    assert.equal(kept.length, count);
    kept.forEach((item, i) => assert.ok(holdsPattern(item, i, bytes), `item ${i} intact`));
    // Its own buffer holds the item alone (read split at its envelope) or its whole frame.
    const own = kept.filter((item) => item.buffer.byteLength < bytes + 1024).length;
    assert.ok(own >= count - 8, `${own} of ${count} items in a buffer of their own`);
  });
}
