import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { memoryPair } from "../transports/memory.ts";
import { openChannel } from "./channel.ts";

Deno.test("heartbeat: a stall of this side's own event loop is not taken for a silent peer", async () => {
  const handlers = { echo: (x: number) => x };
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openChannel(a, { codec: jsonCodec(), handlers }),
    openChannel<typeof handlers>(b, {
      codec: jsonCodec(),
      heartbeat: { interval: 10, timeout: 40 },
    }),
  ]);
  for (let round = 0; round < 3; round++) {
    // Busy for 5x the timeout: the timer fires late, with nothing read meanwhile.
    const until = performance.now() + 200;
    while (performance.now() < until) { /* a long synchronous task */ }
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(await client.remote.echo(round), round);
  }
  await Promise.all([client.close(), server.close()]);
});
