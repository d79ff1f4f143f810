import assert from "node:assert/strict";
import { WriteCoalescer } from "./_post_message_channel.ts";

Deno.test("write coalescer: writes of one turn go as one chunk, a few microtasks later", async () => {
  const sent: Uint8Array[] = [];
  const coalescer: WriteCoalescer = new WriteCoalescer(() => {
    const staged = coalescer.take();
    if (staged !== undefined) sent.push(staged);
  });
  coalescer.stage(new Uint8Array([1, 2]));
  coalescer.stage(new Uint8Array([3]));
  assert.equal(sent.length, 0);
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(sent, [new Uint8Array([1, 2, 3])]);
  assert.equal(coalescer.take(), undefined);
});

Deno.test("write coalescer: a full buffer is flushed first; dropped bytes never go", async () => {
  const sent: number[] = [];
  const coalescer: WriteCoalescer = new WriteCoalescer(() => {
    const staged = coalescer.take();
    if (staged !== undefined) sent.push(staged.length);
  });
  for (let i = 0; i < 17; i++) coalescer.stage(new Uint8Array(4000));
  assert.deepEqual(sent, [64_000]);
  coalescer.drop();
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(sent, [64_000]);
});
