// The wire trace (ChannelOptions.trace, CONDUIT_TRACE): a golden conversation, secrets left
// out of an authenticated handshake, the environment variable in a real process, and a
// worker's trace reaching its parent with its stderr.

import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { memoryPair } from "../transports/memory.ts";
import { openChannel } from "./channel.ts";
import { leakFreeTest, testEnv } from "../workers/_test_processes.ts";
import { spawnWorker } from "../workers/spawn_worker.ts";
import type { EchoApi } from "../workers/_testdata/echo_worker.ts";

const handlers = {
  add: ({ a, b }: { a: number; b: number }) => a + b,
  count: async function* (to: number) {
    for (let i = 1; i <= to; i++) yield i;
  },
  fail: () => {
    throw new RangeError("no");
  },
  log: (_: string) => {},
};

/** Times vary from run to run; the rest of a line does not. */
function normalized(lines: string[]): string[] {
  return lines.map((line) => line.replace(/\(\+\d+\.\d ms\)/, "(+T ms)"));
}

Deno.test("trace: a fixed conversation, line by line", async () => {
  const lines: string[] = [];
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openChannel(a, { codec: jsonCodec(), handlers }),
    openChannel<typeof handlers>(b, { codec: jsonCodec(), trace: (line) => lines.push(line) }),
  ]);
  assert.equal(await client.remote.add({ a: 1, b: 2 }), 3);
  for await (const _ of client.remote.count(2)) { /* drain */ }
  await assert.rejects(client.remote.fail(), /no/);
  client.notify("log", "x".repeat(200));
  await client.remote.add({ a: 2, b: 2 }, { key: "k1", headers: { "x-id": "7" }, timeout: 500 });
  await Promise.all([client.close(), server.close()]);
  const hello =
    '{"protocol":"conduit","version":1,"codec":"json","maxFrameBytes":67108864,"maxInFlight":1024,"streamWindowBytes":262144,"features":["call-meta"]}';
  assert.deepEqual(normalized(lines), [
    `conduit → HELLO ${hello}`,
    `conduit ← HELLO ${hello}`,
    'conduit → CALL #1 add timeout 60000 ms 13 B {"a":1,"b":2}',
    "conduit ← RESULT #1 1 B 3 (+T ms)",
    "conduit → CALL #2 count timeout 60000 ms 1 B 2",
    "conduit ← DATA #2 1 B 1 (+T ms)",
    "conduit ← DATA #2 1 B 2 (+T ms)",
    "conduit ← END #2 (+T ms)",
    "conduit → CALL #3 fail timeout 60000 ms no value",
    'conduit ← ERROR #3 {"name":"RangeError","message":"no"} (+T ms)',
    `conduit → NOTIFY log 202 B "${"x".repeat(95)}…`,
    'conduit → CALL #4 add timeout 500 ms meta {"key":"k1","headers":{"x-id":"7"}} 13 B {"a":2,"b":2}',
    "conduit ← RESULT #4 1 B 4 (+T ms)",
    "conduit → GOODBYE",
    "conduit ← GOODBYE",
  ]);
});

Deno.test("trace: an authenticated handshake shows neither the secret, the nonce nor the proof", async () => {
  const lines: string[] = [];
  const secret = new TextEncoder().encode("correct horse battery staple");
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openChannel(a, {
      handlers,
      auth: { secret, role: "responder" },
      trace: (line) => lines.push(`S ${line}`),
    }),
    openChannel<typeof handlers>(b, { auth: { secret }, trace: (line) => lines.push(line) }),
  ]);
  assert.equal(await client.remote.add({ a: 1, b: 1 }), 2);
  await Promise.all([client.close(), server.close()]);
  const text = lines.join("\n");
  assert.match(text, /conduit → AUTH \(proof not shown\)/);
  assert.match(text, /"auth":\{"method":"hmac-sha256-v2","role":"…"\}/);
  assert.doesNotMatch(text, /nonce/);
  assert.doesNotMatch(text, /[0-9a-f]{64}/);
  assert.doesNotMatch(text, /horse/);
});

Deno.test("trace: off by default, and CONDUIT_TRACE=1 turns it on in a real process", async () => {
  const script = `
    import { openChannel } from "${new URL("./channel.ts", import.meta.url)}";
    import { memoryPair } from "${new URL("../transports/memory.ts", import.meta.url)}";
    const [a, b] = memoryPair();
    const handlers = { ping: () => "pong" };
    const [s, c] = await Promise.all([openChannel(a, { handlers }), openChannel(b)]);
    await c.call("ping");
    await Promise.all([c.close(), s.close()]);
  `;
  const run = async (env: Record<string, string>) => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--no-prompt", "--allow-env=CONDUIT_TRACE", script],
      env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(output.success, new TextDecoder().decode(output.stderr));
    return new TextDecoder().decode(output.stderr);
  };
  assert.equal(await run({}), "");
  assert.equal(await run({ CONDUIT_TRACE: "0" }), "");
  const traced = await run({ CONDUIT_TRACE: "1" });
  assert.match(traced, /conduit → CALL #1 ping/);
  assert.match(traced, /conduit ← CALL #1 ping/);
  assert.match(traced, /conduit → RESULT #1 \d+ B "pong" \(\+\d+\.\d ms\)/);
});

leakFreeTest("trace: a worker's trace reaches the parent with its stderr", async () => {
  const lines: string[] = [];
  const worker = await spawnWorker<EchoApi>(
    new URL("../workers/_testdata/echo_worker.ts", import.meta.url),
    {
      env: { ...testEnv(), CONDUIT_TRACE: "1" },
      permissions: { env: ["CONDUIT_TRACE"] },
      stderr: (line) => lines.push(line),
    },
  );
  try {
    assert.equal(await worker.remote.echo("hi"), "hi");
  } finally {
    await worker.close();
  }
  assert.ok(lines.some((line) => /^conduit ← CALL #1 echo/.test(line)), lines.join("\n"));
  assert.ok(lines.some((line) => /^conduit → RESULT #1/.test(line)), lines.join("\n"));
});
