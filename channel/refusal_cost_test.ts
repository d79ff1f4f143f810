// What a connection costs the server, counted rather than timed: the read buffers a refused
// handshake allocates (never the large ones) and what closed connections keep (nothing).

import assert from "node:assert/strict";
import { rawCodec } from "../codecs/raw.ts";
import { readBufferBytes } from "../transports/_byte_channel_transport.ts";
import { connectUnix, listenUnix } from "../transports/unix.ts";
import { openChannel } from "./channel.ts";
import { AuthenticationError } from "./errors.ts";
import { serve, type Server } from "./serve.ts";

const codec = rawCodec();
const SECRET = "the-server-secret-0123456789";
/** The most read buffer one side of a refused connection may allocate. */
const REFUSED_READ_BUFFER_BYTES = 4 * 1024;

const handlers = { echo: (bytes: Uint8Array) => bytes };

async function withServer(fn: (path: string, server: Server) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
  const path = `${dir}/s`;
  const server = serve(await listenUnix(path), { codec, handlers, auth: { secret: SECRET } });
  try {
    await fn(path, server);
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Waits until every connection the server held is released (its transport too). */
async function released(server: Server): Promise<void> {
  while (server.connections > 0) await new Promise((resolve) => setTimeout(resolve, 5));
}

Deno.test("refused handshakes allocate small read buffers only, and keep none", async () => {
  await withServer(async (path, server) => {
    const before = readBufferBytes();
    const refusals = 24;
    for (let round = 0; round < refusals / 6; round++) {
      await Promise.all(Array.from({ length: 6 }, async () => {
        const transport = await connectUnix(path);
        await assert.rejects(
          openChannel(transport, {
            codec,
            auth: { secret: "a wrong secret, as long as the right one" },
          }),
          AuthenticationError,
        );
      }));
    }
    await released(server);
    const after = readBufferBytes();
    // Both ends of each refused connection are in this process.
    const allocated = after.allocated - before.allocated;
    assert.ok(
      allocated <= refusals * 2 * REFUSED_READ_BUFFER_BYTES,
      `${refusals} refused handshakes allocated ${allocated} bytes of read buffers`,
    );
    assert.equal(after.held, before.held, "closed connections still hold read buffers");
  });
});

Deno.test("a closed connection keeps no read buffer, however large its reads grew", async () => {
  await withServer(async (path, server) => {
    const before = readBufferBytes();
    const client = await openChannel<typeof handlers>(await connectUnix(path), {
      codec,
      auth: { secret: SECRET },
    });
    // Many mid-sized frames at once fill reads (a large frame is read into a buffer of its
    // own instead), so both ends' read buffers grow.
    for (const size of [10, 20_000, 1_000_000, 10]) {
      const replies = await Promise.all(
        Array.from({ length: 32 }, () => client.remote.echo(new Uint8Array(size).fill(size % 251))),
      );
      assert.ok(replies.every((reply) => reply.length === size));
    }
    assert.ok(readBufferBytes().allocated - before.allocated > 64 * 1024, "the reads grew");
    await client.close();
    await released(server);
    assert.equal(readBufferBytes().held, before.held);
  });
});
