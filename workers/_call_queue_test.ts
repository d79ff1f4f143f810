import assert from "node:assert/strict";
import fc from "fast-check";
import { CallQueue } from "./_call_queue.ts";

interface Item {
  id: number;
  done: boolean;
}

Deno.test("CallQueue: first in, first out; a retried item goes to the front", () => {
  const queue = new CallQueue<Item>();
  const items = [1, 2, 3].map((id) => ({ id, done: false }));
  for (const item of items) queue.push(item);
  assert.equal(queue.waiting, 3);
  assert.equal(queue.peek(), items[0]);
  queue.take();
  queue.pushFront(items[0]);
  const order: number[] = [];
  for (let item = queue.peek(); item !== undefined; item = queue.peek()) {
    queue.take();
    order.push(item.id);
  }
  assert.deepEqual(order, [1, 2, 3]);
  assert.equal(queue.waiting, 0);
});

Deno.test("CallQueue: an item settled while waiting is skipped and no longer counts", () => {
  const queue = new CallQueue<Item>();
  const [a, b, c] = [1, 2, 3].map((id) => ({ id, done: false }));
  queue.push(a);
  queue.push(b);
  queue.push(c);
  b.done = true;
  queue.cancelled();
  assert.equal(queue.waiting, 2);
  queue.take(); // a
  assert.equal(queue.peek(), c);
  a.done = true;
  assert.deepEqual(queue.clear(), [c]);
  assert.equal(queue.waiting, 0);
  assert.equal(queue.peek(), undefined);
});

Deno.test("CallQueue: agrees with an array model, compaction included", () => {
  type Op = { op: "push" } | { op: "front" } | { op: "take" } | { op: "settle"; at: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.constant({ op: "push" as const }),
    fc.constant({ op: "front" as const }),
    fc.constant({ op: "take" as const }),
    fc.nat(50).map((at) => ({ op: "settle" as const, at })),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 3000 }), (ops) => {
      const queue = new CallQueue<Item>();
      let model: Item[] = [];
      let next = 0;
      for (const step of ops) {
        if (step.op === "push" || step.op === "front") {
          const item = { id: next++, done: false };
          if (step.op === "push") {
            queue.push(item);
            model.push(item);
          } else {
            queue.pushFront(item);
            model.unshift(item);
          }
        } else if (step.op === "take") {
          const item = queue.peek();
          assert.equal(item, model[0]);
          if (item !== undefined) {
            queue.take();
            model.shift();
          }
          queue.compact();
        } else if (model.length > 0) {
          const item = model[step.at % model.length];
          item.done = true;
          queue.cancelled();
          model = model.filter((m) => m !== item);
        }
        assert.equal(queue.waiting, model.length);
      }
      assert.deepEqual(queue.clear(), model);
    }),
    { numRuns: 50 },
  );
});

Deno.test("CallQueue: a long queue taken from keeps its order across compaction", () => {
  const queue = new CallQueue<Item>();
  for (let id = 0; id < 3000; id++) queue.push({ id, done: false });
  for (let id = 0; id < 2000; id++) {
    assert.equal(queue.peek()?.id, id);
    queue.take();
    queue.compact();
  }
  queue.pushFront({ id: -1, done: false });
  assert.equal(queue.waiting, 1001);
  assert.deepEqual(queue.clear().map((item) => item.id), [
    -1,
    ...Array.from({ length: 1000 }, (_, i) => 2000 + i),
  ]);
});
