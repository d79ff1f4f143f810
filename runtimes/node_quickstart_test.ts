// docs/node.md's quickstart, run as written: its worker.ts, main.ts, server.ts and client.ts
// copied from the page into a folder beside a link to this checkout, outside it, and run with
// Node (the one .ci/run
// installs into .tools/; without it the test is skipped, naming it). Only the port is changed,
// to a free one, so that the test never meets another program on 8040.

import assert from "node:assert/strict";
import { installed, NODE_BIN as NODE, skipped } from "../_test_tools.ts";

const ROOT = new URL("../", import.meta.url);

Deno.test({
  name: `docs/node.md: worker.ts, main.ts, server.ts and client.ts run as written on Node${
    skipped(NODE)
  }`,
  ignore: !installed(NODE),
  async fn() {
    const page = await Deno.readTextFile(new URL("docs/node.md", ROOT));
    const files = new Map(
      [...page.matchAll(/```ts ignore\n\/\/ hello\/(\S+)\n([\s\S]*?)```/g)].map((
        [, name, body],
      ) => [name, body]),
    );
    assert.deepEqual([...files.keys()], ["worker.ts", "main.ts", "server.ts", "client.ts"]);
    const port = freePort();
    const dir = await Deno.makeTempDir({ prefix: "conduit-quickstart" });
    try {
      await Deno.symlink(new URL(".", ROOT).pathname, `${dir}/conduit`);
      await Deno.mkdir(`${dir}/hello`);
      await Deno.writeTextFile(`${dir}/hello/package.json`, '{ "type": "module" }\n');
      for (const [name, body] of files) {
        if (name === "server.ts" || name === "client.ts") assert.match(body, /\b8040\b/, name);
        await Deno.writeTextFile(`${dir}/hello/${name}`, body.replaceAll("8040", String(port)));
      }
      const main = await runNode(dir, "", "main.ts");
      assert.equal(main.stderr, "");
      assert.equal(
        main.stdout,
        "sha-256 of hello: 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\n" +
          "countdown 3\ncountdown 2\ncountdown 1\n",
      );
      assert.equal(main.code, 0);
      const secret = crypto.randomUUID();
      const server = new Deno.Command(NODE, {
        args: ["server.ts"],
        cwd: `${dir}/hello`,
        env: { CONDUIT_SECRET: secret },
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const serverOut = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
      const serverErr = new Response(server.stderr).text();
      try {
        assert.equal((await serverOut.read()).value, `listening on 127.0.0.1:${port}\n`);
        const client = await runNode(dir, secret);
        assert.equal(client.stderr, "");
        assert.equal(client.stdout, "2 + 3 = 5\ncount 1\ncount 2\ncount 3\n");
        assert.equal(client.code, 0);
        const refused = await runNode(dir, "not the secret, but as long as one");
        assert.notEqual(refused.code, 0);
        assert.match(refused.stderr, /AuthenticationError: The peer refused the handshake/);
      } finally {
        server.kill("SIGINT");
        const status = await server.status;
        await serverOut.cancel();
        assert.equal(await serverErr, "");
        assert.equal(status.code, 0, "Ctrl-C stops the server cleanly");
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

async function runNode(
  dir: string,
  secret: string,
  file = "client.ts",
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { code, stdout, stderr } = await new Deno.Command(NODE, {
    args: [file],
    cwd: `${dir}/hello`,
    env: { CONDUIT_SECRET: secret },
  }).output();
  const text = new TextDecoder();
  return { code, stdout: text.decode(stdout), stderr: text.decode(stderr) };
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}
