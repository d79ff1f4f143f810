/**
 * The Unix socket example of docs/servers.md: a server over a Unix socket with `serve()`, and a
 * client, in the same process.
 *
 *   deno run --allow-read=/tmp --allow-write=/tmp --allow-net examples/quickstart_unix.ts
 *
 * @module
 */

import { openChannel, serve } from "@conduit/ipc/channel";
import { msgpackCodec } from "@conduit/ipc/codecs/msgpack";
import { connectUnix, listenUnix } from "@conduit/ipc/transports/unix";

const handlers = { add: ({ a, b }: { a: number; b: number }) => a + b };

const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "conduit" });
try {
  const path = `${dir}/demo.sock`;
  // Accepts concurrently, one channel per connection; a bad client affects no other.
  const server = serve(await listenUnix(path), { codec: msgpackCodec(), handlers });

  const client = await openChannel<typeof handlers>(await connectUnix(path), {
    codec: msgpackCodec(),
  });
  console.log(await client.remote.add({ a: 1, b: 2 })); // 3
  await client.close(); // goodbye, drain in-flight calls, close
  await server.close(); // stop accepting, goodbye to every client, drain, remove the socket file
} finally {
  await Deno.remove(dir, { recursive: true });
}
