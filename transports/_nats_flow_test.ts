import assert from "node:assert/strict";
import { ChunkQueue, ReceiveCredit, SendCredit } from "./_nats_flow.ts";

Deno.test("nats flow: a writer waits for credit, wakes on a grant, fails with the error given", async () => {
  const credit = new SendCredit(100);
  credit.spend(100);
  assert.equal(credit.available, 0);
  let woke = false;
  const waiting = credit.wait().then(() => woke = true);
  await Promise.resolve();
  assert.equal(woke, false);
  credit.grant(90); // an old, smaller total changes nothing
  await Promise.resolve();
  assert.equal(woke, false);
  credit.grant(150);
  await waiting;
  assert.equal(credit.available, 50);
  credit.spend(50);
  const failing = credit.wait();
  const error = new Error("gone");
  credit.fail(error);
  await assert.rejects(failing, (e) => e === error);
});

Deno.test("nats flow: the receiver grants once a quarter of the window was read, and catches overruns", () => {
  const credit = new ReceiveCredit(1000);
  assert.equal(credit.receive(1000), undefined);
  assert.equal(credit.receive(1), "1001 > 1000 bytes");
  assert.equal(credit.consume(249), undefined);
  assert.equal(credit.consume(1), 1250);
  assert.equal(credit.receive(250), undefined);
  assert.equal(credit.receive(1), "1251 > 1250 bytes");
  assert.equal(credit.consume(100), undefined);
});

Deno.test("nats flow: queued chunks are read before the end or the failure that follows them", async () => {
  const taken: number[] = [];
  const queue = new ChunkQueue((chunk) => taken.push(chunk[0]));
  const waiting = queue.read();
  queue.push(new Uint8Array([1]));
  assert.deepEqual(await waiting, new Uint8Array([1]));
  queue.push(new Uint8Array([2]));
  queue.push(new Uint8Array([3]));
  queue.end();
  assert.equal(queue.ended, true);
  assert.deepEqual(await queue.read(), new Uint8Array([2]));
  assert.deepEqual(await queue.read(), new Uint8Array([3]));
  assert.equal(await queue.read(), null);
  assert.deepEqual(taken, [1, 2, 3]);

  const failing = new ChunkQueue(() => {});
  const pending = failing.read();
  const error = new Error("lost");
  failing.fail(error);
  await assert.rejects(pending, (e) => e === error);
  await assert.rejects(failing.read(), (e) => e === error);
});
