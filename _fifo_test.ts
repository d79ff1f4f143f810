import assert from "node:assert/strict";
import fc from "fast-check";
import { Fifo } from "./_fifo.ts";

Deno.test("Fifo: behaves as an array pushed at the back and shifted at the front", () => {
  // Each step pushes the next number, shifts, peeks or clears; the ring wraps and grows.
  const step = fc.oneof(
    { weight: 6, arbitrary: fc.constant("push" as const) },
    { weight: 5, arbitrary: fc.constant("shift" as const) },
    { weight: 2, arbitrary: fc.constant("peek" as const) },
    { weight: 1, arbitrary: fc.constant("clear" as const) },
  );
  fc.assert(
    fc.property(fc.array(step, { maxLength: 500 }), (steps) => {
      const fifo = new Fifo<number>();
      const model: number[] = [];
      let next = 0;
      for (const s of steps) {
        if (s === "push") {
          fifo.push(next);
          model.push(next++);
        } else if (s === "shift") {
          assert.equal(fifo.shift(), model.shift());
        } else if (s === "peek") {
          assert.equal(fifo.peek(), model[0]);
        } else {
          fifo.clear();
          model.length = 0;
        }
        assert.equal(fifo.length, model.length);
      }
      while (model.length > 0) assert.equal(fifo.shift(), model.shift());
      assert.equal(fifo.shift(), undefined);
      assert.equal(fifo.peek(), undefined);
    }),
  );
});

Deno.test("Fifo: a long queue drained from the front keeps its order", () => {
  const fifo = new Fifo<{ n: number }>();
  const count = 100_000;
  for (let n = 0; n < count; n++) fifo.push({ n });
  for (let n = 0; n < count; n++) {
    assert.equal(fifo.peek()?.n, n);
    assert.equal(fifo.shift()?.n, n);
    // Pushing while draining makes the ring wrap round.
    if (n % 3 === 0) fifo.push({ n: count + n });
  }
  let expected = 0;
  for (let item = fifo.shift(); item !== undefined; item = fifo.shift()) {
    assert.equal(item.n, count + expected);
    expected += 3;
  }
  assert.equal(fifo.length, 0);
});
