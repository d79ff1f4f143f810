// conduit ⇄ Python with shared-secret authentication (docs/protocol.md §5.1) over TCP: a
// conduit serve() loop with `auth`, and interop/python/auth_client.py, written from the spec.

import assert from "node:assert/strict";
import { AuthenticationError } from "../channel/errors.ts";
import { serve } from "../channel/serve.ts";
import { jsonCodec } from "../codecs/json.ts";
import { listenTcp } from "../transports/tcp.ts";

const CLIENT = new URL("./python/auth_client.py", import.meta.url).pathname;
const SECRET = "a secret shared with python 0123456789";
const python = await new Deno.Command("python3", { args: ["--version"], stdout: "null" })
  .output().then((out) => out.success, () => false);
if (!python) console.warn("interop/python_auth_test: python3 is not installed; skipping");

async function runClient(port: number, secret: string | undefined) {
  const { code, stdout, stderr } = await new Deno.Command("python3", {
    args: [CLIENT, String(port)],
    env: { PYTHONDONTWRITEBYTECODE: "1", CONDUIT_SECRET: secret ?? "" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes).trim();
  return { code, stdout: text(stdout), stderr: text(stderr) };
}

Deno.test({
  name: "interop/python: auth over TCP, the right secret, a wrong one and none",
  ignore: !python,
  async fn() {
    const listener = await listenTcp({ port: 0 });
    const { port } = listener.addr as Deno.NetAddr;
    const errors: unknown[] = [];
    let calls = 0;
    const server = serve(listener, {
      codec: jsonCodec(),
      handlers: { add: ({ a, b }: { a: number; b: number }) => (calls++, a + b) },
      auth: { secret: SECRET },
      onError: (error) => errors.push((error as Error).cause ?? error),
    });
    try {
      const good = await runClient(port, SECRET);
      assert.deepEqual([good.code, good.stdout], [0, "5"], good.stderr);

      const wrong = await runClient(port, "not the secret shared with python");
      assert.equal(wrong.code, 3, wrong.stderr);
      assert.match(wrong.stderr, /handshake failed: auth_failed/);

      const none = await runClient(port, undefined);
      assert.equal(none.code, 3, none.stderr);
      assert.match(none.stderr, /handshake failed: auth_required/);

      assert.equal(calls, 1);
      while (server.connections > 0) await new Promise((resolve) => setTimeout(resolve, 5));
      const codes = errors.map((error) => (error as AuthenticationError).code);
      assert.ok(errors.every((error) => error instanceof AuthenticationError), String(errors));
      assert.deepEqual(codes.sort(), ["auth_failed", "auth_required"]);
    } finally {
      await server.close();
    }
  },
});
