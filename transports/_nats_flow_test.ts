import assert from "node:assert/strict";
import { ChunkQueue } from "./_nats_flow.ts";

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
