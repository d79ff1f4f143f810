// Streams and flow control under misuse and hostile peers, second look: bytes given up twice,
// producers stopped while the transport is full, and what a peer's stream frames can do.

import assert from "node:assert/strict";
import { rawCodec } from "../codecs/raw.ts";
import { transfer } from "../transfer.ts";
import { unix } from "../transports/_test_pairs.ts";
import { memoryPair } from "../transports/memory.ts";
import { encodeFrame, FrameDecoder } from "../framing/frame_decoder.ts";
import { decodeEnvelope, encodeEnvelope, type Envelope } from "../protocol/envelope.ts";
import { helloBody, json } from "./_test_raw_peer.ts";
import { openChannel } from "./channel.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("streams hostile: bytes given up twice fail the stream and leave the connection intact", async () => {
  // The second transfer() of the same received bytes: at once (while the first is still being
  // written), or once the first was written and its memory taken back.
  for (const gapMs of [0, 50]) {
    const pair = await unix.pair();
    const handlers = {
      async *twice(bytes: Uint8Array) {
        yield transfer(bytes);
        if (gapMs > 0) await sleep(gapMs);
        yield transfer(bytes);
      },
      echo: (bytes: Uint8Array) => bytes,
    };
    const [server, client] = await Promise.all([
      openChannel(pair.a, { codec: rawCodec(), handlers }),
      openChannel<typeof handlers>(pair.b, { codec: rawCodec() }),
    ]);
    const sizes: number[] = [];
    const failure = await (async () => {
      for await (
        const item of client.remote.twice(new Uint8Array(70_000).fill(7), { timeout: 5000 })
      ) {
        assert.ok(item.every((byte) => byte === 7));
        sizes.push(item.length);
      }
    })().then(() => undefined, (error) => error);
    // Never an item that is not what was sent (an empty one), nor a hang.
    assert.deepEqual(sizes, [70_000], `gap ${gapMs} ms`);
    assert.ok(failure instanceof Error, `gap ${gapMs} ms: ${failure}`);
    assert.match(failure.message, /given up/);
    // The connection's framing is intact: a later call is answered.
    const echoed = await client.remote.echo(new Uint8Array(100).fill(3), { timeout: 5000 });
    assert.equal(echoed.length, 100);
    await Promise.all([client.close(), server.close()]);
    await pair.cleanup();
  }
});

/** Reads frames from `reader` until one whose envelope matches `kind`. */
async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  decoder: FrameDecoder,
  kind: string,
): Promise<Envelope> {
  for (;;) {
    let frame: Uint8Array | undefined;
    while ((frame = decoder.next()) !== undefined) {
      const envelope = decodeEnvelope(frame.slice());
      if (envelope.kind === kind) return envelope;
    }
    const { value, done } = await reader.read();
    if (done) throw new Error(`ended before ${kind}`);
    decoder.push(value);
  }
}

Deno.test("streams hostile: a param stream cancelled while the transport is full stops its source at once", async () => {
  // A peer that reads the CALL, then stops reading: the caller's writer fills and its pump
  // waits for room. The peer's CANCEL(R=1) and then its terminal frame must still stop the
  // source (its finally runs), not leave it waiting for a drain that never comes.
  const [a, b] = memoryPair({ highWaterMark: 64 * 1024 });
  const writer = a.writable.getWriter();
  const reader = a.readable.getReader();
  const decoder = new FrameDecoder();
  const send = (envelope: Envelope) => writer.write(encodeFrame(encodeEnvelope(envelope)));
  const opening = openChannel<{ up(items: AsyncIterable<Uint8Array>): number }>(b, {
    codec: rawCodec(),
  });
  await send({ kind: "hello", body: helloBody({ codec: "raw", streamWindowBytes: 1 << 30 }) });
  await readUntil(reader, decoder, "hello");
  const client = await opening;
  const stopped = Promise.withResolvers<void>();
  let produced = 0;
  async function* source() {
    try {
      for (;;) {
        produced++;
        yield new Uint8Array(16 * 1024);
      }
    } finally {
      stopped.resolve();
    }
  }
  const call = client.remote.up(source()).catch((error) => error);
  const { id } = await readUntil(reader, decoder, "call") as { id: number };
  // Wait until the pump is held by the full transport.
  for (let last = -1; produced !== last;) {
    last = produced;
    await sleep(20);
  }
  await send({ kind: "cancel", id, receiverId: true, body: new Uint8Array(0) });
  await send({ kind: "error", id, receiverId: true, body: json({ message: "no", code: "x" }) });
  const outcome = await Promise.race([stopped.promise.then(() => "stopped"), sleep(500)]);
  assert.equal(outcome, "stopped", `the source is still open after ${produced} items`);
  assert.ok(await call instanceof Error);
  reader.releaseLock();
  await a.close();
  await client.closed.catch(() => {});
  await writer.close().catch(() => {});
});
