import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { memoryPair } from "../transports/memory.ts";
import { denoInfo } from "../_test_deno_info.ts";
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

Deno.test("heartbeat: its timers are not in channel.ts's static graph, only imported on demand", async () => {
  // A channel without a heartbeat or an idle timeout never loads them (module count, issue 28).
  const timers = new URL("./_connection_timers.ts", import.meta.url).href;
  const info = await denoInfo(new URL("./channel.ts", import.meta.url).pathname);
  const modules = new Map(info.modules.map((m) => [m.specifier, m]));
  const loaded = new Set<string>();
  const pending = [...info.roots];
  let imported = false;
  while (pending.length > 0) {
    const specifier = pending.pop() as string;
    if (loaded.has(specifier)) continue;
    loaded.add(specifier);
    for (const dependency of modules.get(specifier)?.dependencies ?? []) {
      if (dependency.code === undefined) continue;
      if (!dependency.isDynamic) pending.push(dependency.code.specifier);
      else if (dependency.code.specifier === timers) imported = true;
    }
  }
  assert.ok(!loaded.has(timers), "channel.ts loads _connection_timers.ts statically");
  assert.ok(imported, "nothing in channel.ts's graph imports _connection_timers.ts on demand");
});

Deno.test("heartbeat: an idle timeout alone, without a heartbeat, still closes an idle channel", async () => {
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openChannel(a, { codec: jsonCodec(), idleTimeout: 50 }),
    openChannel(b, { codec: jsonCodec() }),
  ]);
  await server.closed;
  await client.closed;
});
