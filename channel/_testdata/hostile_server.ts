// A conduit server in its own process for the hostile-peer memory tests: it listens on the
// Unix socket path given as its argument, serves every connection with `echo` (and, with
// `--any`, a no-op for every other name, as a JSON-RPC catch-all does; with `--jsonrpc` too, over
// JSON-RPC with NDJSON framing instead of conduit's protocol), and answers each line
// on stdin with its memory after a full GC (run it with --expose-gc), as JSON: `rss` and `live`
// (the JavaScript heap in use plus external memory), in bytes.
//
//   deno run -A --v8-flags=--expose-gc channel/_testdata/hostile_server.ts <path> [--any] [--jsonrpc]

import { jsonCodec } from "../../codecs/json.ts";
import { listenUnix } from "../../transports/unix.ts";
import { openJsonRpc } from "../../jsonrpc/mod.ts";
import { openChannel } from "../channel.ts";

const gc = (globalThis as { gc?: () => void }).gc;
const echo = { echo: (value: unknown) => value };
const noOp = { value: () => {}, writable: false, enumerable: true, configurable: true };
const handlers = Deno.args.includes("--any")
  ? new Proxy(echo, {
    getOwnPropertyDescriptor: (target, name) =>
      name in target ? Reflect.getOwnPropertyDescriptor(target, name) : noOp,
  })
  : echo;
const listener = await listenUnix(Deno.args[0]);
const served = (async () => {
  for await (const transport of listener) {
    const opening = Deno.args.includes("--jsonrpc")
      ? openJsonRpc(transport, {
        framing: "ndjson",
        handlers: echo,
        // The catch-alls of JSON-RPC: every request and notification no handler serves.
        onRequest: () => null,
        onUnhandledNotification: () => {},
      })
      : openChannel(transport, { codec: jsonCodec(), handlers, handshakeTimeout: 60_000 });
    opening.then((channel) => channel.closed).catch(() => {});
  }
})();

const encoder = new TextEncoder();
console.log("listening");
for await (const _line of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
  gc?.();
  gc?.();
  const { rss, heapUsed, external } = Deno.memoryUsage();
  await Deno.stdout.write(
    encoder.encode(`${JSON.stringify({ rss, live: heapUsed + external })}\n`),
  );
}
await listener.close();
await served;
Deno.exit(0);
