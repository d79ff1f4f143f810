/**
 * Frames over a Unix socket: a server that echoes every frame it receives, and a client that
 * sends a few frames, prints the echoes, and closes everything.
 *
 *   deno run -A examples/frames_over_unix.ts
 *
 * @module
 */

import { FrameDecoderStream, FrameWriter } from "@conduit/ipc/framing";
import type { Transport } from "@conduit/ipc/transports";
import { connectUnix, listenUnix } from "@conduit/ipc/transports/unix";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// Socket paths must be short (about 100 bytes): make a private directory under /tmp.
const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "conduit-" });
const path = `${dir}/echo.sock`;
const listener = await listenUnix(path);
console.log(`server: listening on ${path}`);

// The server: one task per connection, each writing every frame back as it arrives.
const sessions: Promise<void>[] = [];
const accepting = (async () => {
  for await (const transport of listener) sessions.push(echoFrames(transport));
})();

async function echoFrames(transport: Transport): Promise<void> {
  const writer = new FrameWriter(transport.writable);
  for await (const frame of transport.readable.pipeThrough(new FrameDecoderStream())) {
    writer.write(frame);
  }
  // The client sent its last frame and half-closed: finish our side too.
  await writer.close();
  await transport.close();
}

// The client: send three frames, half-close, read the echoes until the server closes.
const client = await connectUnix(path);
const writer = new FrameWriter(client.writable);
for (const text of ["hello", "frames", "over a Unix socket"]) writer.write(encoder.encode(text));
await writer.close();
for await (const frame of client.readable.pipeThrough(new FrameDecoderStream())) {
  console.log(`client: echoed ${JSON.stringify(decoder.decode(frame))}`);
}
await client.close();

// Shut down: stop accepting (this removes the socket file), wait for the sessions.
await listener.close();
await accepting;
await Promise.all(sessions);
await Deno.remove(dir);
console.log("done: every transport, the listener and the socket file are closed");
