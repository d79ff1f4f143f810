// Sending JSON-RPC batches: what sendBatch's callback starts leaves as one array.

import assert from "node:assert/strict";
import { sendBatch } from "./mod.ts";
import { setup } from "./_test_raw_peer.ts";

interface Peer {
  add(p: [number, number]): number;
  echo(p: { s: string }): string;
  note(p: { n: number }): void;
}

type Message = { id?: number; method: string; params?: unknown };

Deno.test("jsonrpc sendBatch: requests and notifications leave as one array; answers settle each", async () => {
  for (const framing of ["ndjson", "content-length"] as const) {
    const { channel, peer } = await setup<Peer>({ framing });
    const [sum, echo] = sendBatch(channel, () => {
      const sum = channel.remote.add([1, 2]);
      channel.notify("note", { n: 1 });
      return [sum, channel.remote.echo({ s: "x" })] as const;
    });
    const batch = await peer.next() as Message[];
    assert.ok(Array.isArray(batch), framing);
    assert.deepEqual(batch.map(({ method, params }) => ({ method, params })), [
      { method: "add", params: [1, 2] },
      { method: "note", params: { n: 1 } },
      { method: "echo", params: { s: "x" } },
    ]);
    assert.equal(batch[1].id, undefined);
    // Answered as an array, in another order.
    await peer.send([
      { jsonrpc: "2.0", id: batch[2].id, result: "x" },
      { jsonrpc: "2.0", id: batch[0].id, result: 3 },
    ]);
    assert.equal(await sum, 3);
    assert.equal(await echo, "x");
    // After the batch, messages leave one by one again.
    const single = channel.remote.add([2, 2]);
    const request = await peer.next() as Message;
    assert.equal(request.method, "add");
    await peer.send({ jsonrpc: "2.0", id: request.id, result: 4 });
    assert.equal(await single, 4);
    await channel.close();
    await peer.close();
  }
});

Deno.test("jsonrpc sendBatch: nested batches join, a throw still sends, past maxFrameBytes splits", async () => {
  const { channel, peer } = await setup<Peer>({ maxFrameBytes: 1024 });
  const calls: Promise<string>[] = [];
  assert.throws(
    () =>
      sendBatch(channel, () => {
        calls.push(channel.remote.echo({ s: "a" }));
        sendBatch(channel, () => calls.push(channel.remote.echo({ s: "b" })));
        throw new Error("halfway");
      }),
    { message: "halfway" },
  );
  const joined = await peer.next() as Message[];
  assert.deepEqual(joined.map(({ params }) => params), [{ s: "a" }, { s: "b" }]);
  for (const message of joined) {
    await peer.send({ jsonrpc: "2.0", id: message.id, result: "ok" });
  }
  assert.deepEqual(await Promise.all(calls), ["ok", "ok"]);

  // Three messages of about 400 bytes: two fit in 1024 bytes, the third leaves in an array
  // of its own.
  const big = sendBatch(
    channel,
    () => [1, 2, 3].map(() => channel.remote.echo({ s: "z".repeat(400) })),
  );
  const first = await peer.next() as Message[];
  const second = await peer.next() as Message[];
  assert.deepEqual([first.length, second.length], [2, 1]);
  for (const message of [...first, ...second]) {
    await peer.send({ jsonrpc: "2.0", id: message.id, result: "big" });
  }
  assert.deepEqual(await Promise.all(big), ["big", "big", "big"]);
  // An empty batch sends nothing.
  assert.equal(sendBatch(channel, () => 7), 7);
  await channel.close();
  await peer.close();
});
