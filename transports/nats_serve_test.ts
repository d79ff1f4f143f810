// serve() and shared-secret authentication over NATS: the server loop of channel/serve.ts on a
// listenNats listener, against a real nats-server (skipped, naming it, where it is missing).

import assert from "node:assert/strict";
import { AuthenticationError } from "../channel/errors.ts";
import { openChannel } from "../channel/channel.ts";
import { serve } from "../channel/serve.ts";
import { jsonCodec } from "../codecs/json.ts";
import { haveNatsServer, startNatsServer } from "./_test_nats_server.ts";
import { connectNats, listenNats } from "./nats.ts";

const handlers = { add: ({ a, b }: { a: number; b: number }) => a + b };

Deno.test({
  name: "nats: serve() over listenNats serves many clients and shuts down gracefully",
  ignore: !haveNatsServer,
  async fn() {
    await using nats = await startNatsServer();
    const [serverNc, clientNc] = await Promise.all([nats.connect(), nats.connect()]);
    const server = serve(await listenNats(serverNc, "math", { queue: "math" }), {
      codec: jsonCodec(),
      handlers,
    });
    const clients = await Promise.all(
      Array.from(
        { length: 20 },
        async () =>
          openChannel<typeof handlers>(await connectNats(clientNc, "math"), { codec: jsonCodec() }),
      ),
    );
    const sums = await Promise.all(clients.map((c, i) => c.remote.add({ a: i, b: 1 })));
    assert.deepEqual(sums, Array.from({ length: 20 }, (_, i) => i + 1));
    assert.equal(server.connections, 20);
    await server.close();
    // The server's GOODBYE ends every client gracefully.
    await Promise.all(clients.map((c) => c.closed));
  },
});

Deno.test({
  name: "nats: serve() with a shared secret over NATS: the right secret calls, a wrong one fails",
  ignore: !haveNatsServer,
  async fn() {
    await using nats = await startNatsServer();
    const [serverNc, clientNc] = await Promise.all([nats.connect(), nats.connect()]);
    const errors: unknown[] = [];
    const server = serve(await listenNats(serverNc, "secret", { queue: "secret" }), {
      codec: jsonCodec(),
      handlers,
      auth: { secret: "correct horse battery staple" },
      onError: (error) => errors.push(error),
    });
    const good = await openChannel<typeof handlers>(await connectNats(clientNc, "secret"), {
      codec: jsonCodec(),
      auth: { secret: "correct horse battery staple" },
    });
    assert.equal(await good.remote.add({ a: 2, b: 3 }), 5);
    await assert.rejects(
      connectNats(clientNc, "secret").then((t) =>
        openChannel(t, { codec: jsonCodec(), auth: { secret: "wrong horse battery staple" } })
      ),
      AuthenticationError,
    );
    await good.close();
    await server.close();
    // The server reports the refused connection, its cause the failed proof.
    assert.equal(errors.length, 1);
    assert.ok(causes(errors[0]).some((e) => e instanceof AuthenticationError), String(errors[0]));
  },
});

/** `error` and its chain of causes. */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error; e !== undefined; e = e instanceof Error ? e.cause : undefined) chain.push(e);
  return chain;
}
