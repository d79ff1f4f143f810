/**
 * The README's TCP quickstart: a server over TCP with `serve()` and shared-secret
 * authentication, a client that proves it holds the secret, and one that does not.
 *
 *   CONDUIT_SECRET=... deno run --allow-net --allow-env=CONDUIT_SECRET examples/quickstart_tcp.ts
 *
 * @module
 */

import { AuthenticationError, openChannel, serve } from "@conduit/ipc/channel";
import { msgpackCodec } from "@conduit/ipc/codecs/msgpack";
import { connectTcp, listenTcp } from "@conduit/ipc/transports/tcp";

const handlers = { add: ({ a, b }: { a: number; b: number }) => a + b };
// Both ends read the secret from their environment: never from the command line.
const secret = Deno.env.get("CONDUIT_SECRET") || crypto.randomUUID();

const listener = await listenTcp({ port: 0 }); // 127.0.0.1 unless a hostname is given
const { port } = listener.addr as Deno.NetAddr;
const stop = new AbortController();
const server = serve(listener, {
  codec: msgpackCodec(),
  handlers,
  auth: { secret }, // nothing but the handshake is read before a client proves it
  signal: stop.signal, // e.g. aborted by a SIGTERM handler
});

const client = await openChannel<typeof handlers>(await connectTcp({ port }), {
  codec: msgpackCodec(),
  auth: { secret },
});
console.log(await client.remote.add({ a: 1, b: 2 })); // 3

try {
  await openChannel(await connectTcp({ port }), {
    codec: msgpackCodec(),
    auth: { secret: "a guess of 16 bytes or more" },
  });
} catch (error) {
  console.log(error instanceof AuthenticationError, (error as AuthenticationError).code); // true auth_failed
}

stop.abort(); // graceful: goodbye to every client, in-flight calls finish, then close
await server.finished;
await client.closed;
