// transfer(): bytes given up to the channel are sent without a copy, settle without waiting
// for their write, and a received frame given back is read into again (transfer.ts).

import assert from "node:assert/strict";
import { jsonCodec } from "./codecs/json.ts";
import { rawCodec } from "./codecs/raw.ts";
import { type TransportKind, transportKinds } from "./transports/_test_pairs.ts";
import { connectUnix, listenUnix } from "./transports/unix.ts";
import { sharedRingPair, sharedRingTransport } from "./transports/shared_ring.ts";
import { messagePortTransport } from "./transports/web_worker.ts";
import { heldRawChannel } from "./channel/_test_scripted_transport.ts";
import { type Channel, openChannel } from "./channel/channel.ts";
import { transfer } from "./transfer.ts";

interface Api {
  echo(bytes: Uint8Array): Uint8Array;
  blobs(count: number): AsyncIterable<Uint8Array>;
  fills(items: AsyncIterable<Uint8Array>): Promise<number[]>;
  note(bytes: Uint8Array): void;
  notes(): number[];
}

const MIB = 1024 * 1024;

/** The byte `bytes` is filled with, or -1 if it holds more than one value (or none). */
function fillOf(bytes: Uint8Array): number {
  const first = bytes.length > 0 ? bytes[0] : -1;
  for (let i = 1; i < bytes.length; i++) if (bytes[i] !== first) return -1;
  return first;
}

/** A server whose handlers give up every large value they send; `params` keeps each echo's. */
function givingHandlers(params: Uint8Array[]) {
  const noted: number[] = [];
  return {
    echo(bytes: Uint8Array): Uint8Array {
      params.push(bytes);
      return transfer(bytes);
    },
    async *blobs(count: number): AsyncIterable<Uint8Array> {
      for (let i = 1; i <= count; i++) yield transfer(new Uint8Array(200_000).fill(i));
    },
    fills: async (items: AsyncIterable<Uint8Array>) => (await Array.fromAsync(items)).map(fillOf),
    note: (bytes: Uint8Array) => void noted.push(fillOf(bytes)),
    notes: () => noted,
  };
}

const codecOptions = {
  codec: rawCodec(),
  methodCodecs: {
    blobs: { param: jsonCodec() },
    fills: { result: jsonCodec() },
    notes: jsonCodec(),
  },
  streamWindowBytes: 64 << 20,
};

async function connect(
  kind: TransportKind,
  params: Uint8Array[] = [],
): Promise<{ client: Channel<Api> } & AsyncDisposable> {
  const pair = await kind.pair();
  const [server, client] = await Promise.all([
    openChannel(pair.a, { ...codecOptions, handlers: givingHandlers(params) }),
    openChannel<Api>(pair.b, codecOptions),
  ]);
  return {
    client,
    async [Symbol.asyncDispose]() {
      await Promise.all([client.close(), server.close()]);
      await pair.cleanup();
    },
  };
}

for (const kind of transportKinds) {
  const test = (name: string, fn: () => Promise<void>) =>
    Deno.test(`transfer() over ${kind.name}: ${name}`, fn);

  test("given-up results, params, items and notifications arrive intact", async () => {
    await using pair = await connect(kind);
    const { remote } = pair.client;
    for (const size of [10, 70_000, MIB]) {
      for (const fill of [1, 2]) {
        const echoed = await remote.echo(transfer(new Uint8Array(size).fill(fill)));
        assert.equal(echoed.length, size);
        assert.equal(fillOf(echoed), fill);
      }
    }
    const items = await Array.fromAsync(remote.blobs(6));
    assert.deepEqual(items.map(fillOf), [1, 2, 3, 4, 5, 6]);
    const given = async function* () {
      for (let i = 1; i <= 6; i++) yield transfer(new Uint8Array(200_000).fill(i));
    };
    assert.deepEqual(await remote.fills(given()), [1, 2, 3, 4, 5, 6]);
    for (const fill of [7, 8, 9]) {
      pair.client.notify("note", transfer(new Uint8Array(200_000).fill(fill)));
    }
    assert.deepEqual(await remote.notes(), [7, 8, 9]);
  });
}

Deno.test("transfer() over unix: an echoed frame's memory holds the next frame, not a copy", async () => {
  // Over a socket a 1 MiB frame spans reads, so it gets a buffer of its own: the handler that
  // gives it back lets the channel read the next param into it once the reply is written.
  const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cdt" });
  const listener = await listenUnix(`${dir}/s`);
  const accepted = listener.accept();
  const connected = await connectUnix(`${dir}/s`);
  const params: Uint8Array[] = [];
  const [client, server] = await Promise.all([
    openChannel<Api>(connected, codecOptions),
    openChannel(await accepted, { ...codecOptions, handlers: givingHandlers(params) }),
  ]);
  try {
    const blob = new Uint8Array(MIB);
    for (let fill = 1; fill <= 6; fill++) {
      const echoed = await client.remote.echo(blob.fill(fill));
      assert.equal(fillOf(echoed), fill);
      assert.equal(fillOf(blob), fill, "the caller's lent param is left as it was");
      assert.ok(client.recycle(echoed), "the result has a buffer of its own");
    }
    await client.remote.notes(); // the last reply's write has resolved on the server
    assert.equal(params.length, 6);
    // Each param was given back once written: detached, its memory the decoder's again.
    assert.deepEqual(params.map((param) => param.length), [0, 0, 0, 0, 0, 0]);
  } finally {
    await Promise.all([client.close(), server.closed, listener.close()]);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("transfer(): a given-up param is the channel's, so a cancelled call settles at once", async () => {
  const { channel, transport, written } = await heldRawChannel();
  const controller = new AbortController();
  let settled = false;
  const call = channel.remote.sum(transfer(new Uint8Array(200_000).fill(7)), {
    signal: controller.signal,
  }).catch((e) => e).finally(() => settled = true);
  await new Promise((resolve) => setTimeout(resolve, 10));
  controller.abort(new Error("stop"));
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(settled, true, "settled while the param was still being written");
  assert.equal((await call as Error).message, "stop");
  transport.release();
  await new Promise((resolve) => setTimeout(resolve, 10));
  const sent = written.find((frame) => frame.kind === "call");
  assert.ok(sent?.kind === "call");
  assert.equal(fillOf(sent.body), 7);
  await channel.abort();
});

Deno.test("transfer() takes a Uint8Array only", () => {
  assert.throws(
    () => transfer(new ArrayBuffer(8) as unknown as Uint8Array),
    TypeError,
  );
});

Deno.test("transfer() over the thread transports: a given-up param moves, as their own transfer()", async () => {
  const rings = sharedRingPair({ ringBytes: 64 * 1024 });
  const ports = new MessageChannel();
  const pairs = [
    [sharedRingTransport(rings[0]), sharedRingTransport(rings[1])],
    [messagePortTransport(ports.port1), messagePortTransport(ports.port2)],
  ];
  for (const [a, b] of pairs) {
    const [client, server] = await Promise.all([
      openChannel<Api>(a, codecOptions),
      openChannel(b, { ...codecOptions, handlers: givingHandlers([]) }),
    ]);
    const param = new Uint8Array(MIB).fill(4);
    const echoed = await client.remote.echo(transfer(param));
    assert.equal(param.byteLength, 0, "the param's buffer moved to the other end");
    assert.equal(fillOf(echoed), 4);
    await Promise.all([client.close(), server.closed]);
  }
});

Deno.test("transfer() over the thread transports: a large body arrives as the buffer that was sent, and moves on again, never copied", async () => {
  const rings = sharedRingPair({ ringBytes: 64 * 1024 });
  const ports = new MessageChannel();
  const pairs = [
    ["shared ring", sharedRingTransport(rings[0]), sharedRingTransport(rings[1])],
    ["message port", messagePortTransport(ports.port1), messagePortTransport(ports.port2)],
  ] as const;
  for (const [name, a, b] of pairs) {
    // Each param as the handler got it: where it lies in its buffer, and that buffer's size.
    const seen: Array<[number, number]> = [];
    const [client, server] = await Promise.all([
      openChannel<Api>(a, codecOptions),
      openChannel(b, {
        ...codecOptions,
        handlers: {
          ...givingHandlers([]),
          echo(bytes: Uint8Array): Uint8Array {
            seen.push([bytes.byteOffset, bytes.buffer.byteLength]);
            return transfer(bytes);
          },
        },
      }),
    ]);
    // Past 4 MiB a frame's buffer would grow as its bytes come, unless the reader moves it.
    for (const [fill, size] of [[1, MIB], [2, MIB], [3, MIB], [4, 5 * MIB]]) {
      const param = new Uint8Array(size).fill(fill);
      const echoed = await client.remote.echo(transfer(param));
      assert.equal(param.byteLength, 0, `${name}: the param's buffer moved to the server`);
      // The frame's envelope came in a chunk before the body: the body was read split from
      // it, so the handler got the transferred buffer itself, not a copy behind the envelope,
      // and the reply, giving it up, moved it back the same way.
      assert.deepEqual(seen.at(-1), [0, size], `${name}: the param is the buffer sent`);
      assert.equal(echoed.byteOffset, 0, `${name}: the result is a buffer of its own`);
      assert.equal(echoed.buffer.byteLength, size, `${name}: the result is the buffer sent`);
      assert.equal(fillOf(echoed), fill);
    }
    await Promise.all([client.close(), server.closed]);
  }
});
