// A conduit server in its own process for the hostile-peer memory tests: it listens on the
// Unix socket path given as its argument, serves every connection with `echo`, and answers
// each line on stdin with its memory after a full GC (run it with --expose-gc), as JSON: `rss`
// and `live` (the JavaScript heap in use plus external memory), in bytes.
//
//   deno run -A --v8-flags=--expose-gc channel/_testdata/hostile_server.ts <path>

import { jsonCodec } from "../../codecs/json.ts";
import { listenUnix } from "../../transports/unix.ts";
import { openChannel } from "../channel.ts";

const gc = (globalThis as { gc?: () => void }).gc;
const listener = await listenUnix(Deno.args[0]);
const served = (async () => {
  for await (const transport of listener) {
    openChannel(transport, {
      codec: jsonCodec(),
      handlers: { echo: (value: unknown) => value },
      handshakeTimeout: 60_000,
    }).then((channel) => channel.closed).catch(() => {});
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
