import assert from "node:assert/strict";
import fc from "fast-check";
import { IdTable } from "./_outgoing_calls.ts";

Deno.test("IdTable: behaves as a Map of increasing ids, long-lived ones included", () => {
  // Each step starts the next id or finishes one in flight (picked by position).
  const step = fc.oneof(fc.constant("add" as const), fc.nat({ max: 1000 }));
  fc.assert(
    fc.property(
      fc.array(step, { maxLength: 400 }),
      fc.integer({ min: 1, max: 40 }),
      (steps, capacity) => {
        const table = new IdTable<{ id: number }>(capacity);
        const model = new Map<number, { id: number }>();
        let next = 1;
        for (const s of steps) {
          if (s === "add") {
            const value = { id: next++ };
            table.add(value);
            model.set(value.id, value);
          } else if (model.size > 0) {
            const id = [...model.keys()][s % model.size];
            table.delete(id);
            model.delete(id);
          }
          assert.equal(table.size, model.size);
        }
        for (let id = 0; id <= next; id++) assert.equal(table.get(id), model.get(id));
        assert.deepEqual(
          [...table.values()].map((v) => v.id).sort((a, b) => a - b),
          [...model.keys()].sort((a, b) => a - b),
        );
        for (const value of table.values()) table.delete(value.id);
        assert.equal(table.size, 0);
        assert.deepEqual([...table.values()], []);
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("IdTable: ids past 2^32 and clear", () => {
  const table = new IdTable<{ id: number }>(16);
  const big = { id: 2 ** 40 + 3 };
  const small = { id: 3 };
  table.add(small);
  table.add(big);
  assert.equal(table.get(2 ** 40 + 3), big);
  assert.equal(table.get(3), small);
  table.clear();
  assert.equal(table.size, 0);
  assert.equal(table.get(3), undefined);
});
