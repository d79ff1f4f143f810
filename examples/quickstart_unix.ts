/**
 * The README's second quickstart: a channel over a Unix socket, one server and one client in
 * the same process.
 *
 *   deno run --allow-read --allow-write examples/quickstart_unix.ts
 *
 * @module
 */

import { openChannel } from "@conduit/ipc/channel";
import { msgpackCodec } from "@conduit/ipc/codecs/msgpack";
import { connectUnix, listenUnix } from "@conduit/ipc/transports/unix";

const handlers = { add: ({ a, b }: { a: number; b: number }) => a + b };

const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "conduit" });
const listener = await listenUnix(`${dir}/demo.sock`); // owner-only, removed on close
const serving = (async () => {
  for await (const transport of listener) {
    const server = await openChannel(transport, { codec: msgpackCodec(), handlers });
    await server.closed;
  }
})();

const client = await openChannel<typeof handlers>(await connectUnix(`${dir}/demo.sock`), {
  codec: msgpackCodec(),
});
console.log(await client.remote.add({ a: 1, b: 2 })); // 3
await client.close(); // goodbye, drain in-flight calls, close
await listener.close();
await serving;
await Deno.remove(dir);
