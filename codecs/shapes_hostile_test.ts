// A hostile peer against the structured codec's shape tables (docs/protocol.md §14): what a
// peer can make either side's table hold, and whether the two sides stay in step.

import assert from "node:assert/strict";
import { CodecError, ShapeError } from "../errors.ts";
import { ShapeDecoder, ShapeEncoder, STRUCTURED_EXT, structuredCodec } from "./structured.ts";
import { Direction, thrown } from "./_test_util.ts";

const codec = structuredCodec();

Deno.test("shapes hostile: keys over maxKeyBytes take no room in the sender's table", () => {
  // A handler that echoes records keyed by what its peer chose (a name, a path): every key is
  // too long for a shape, so none of them may use up the table's room for later shapes.
  const direction = new Direction();
  for (let i = 0; i < 5000; i++) {
    const key = `${i}:`.padEnd(129, "x");
    const record = { [key]: i };
    assert.deepStrictEqual(direction.send([record]).value, [record]);
  }
  assert.equal(direction.defined, 0);
  const rows = [{ id: 1, name: "a" }, { id: 2, name: "b" }];
  assert.deepStrictEqual(direction.send(rows).value, rows);
  assert.equal(direction.defined, 1);
});

Deno.test("shapes hostile: records keyed by data do not stop later shapes from being made", () => {
  // A dictionary keyed by names a peer chose: each record's keys are new, and never repeat.
  const direction = new Direction();
  for (let i = 0; i < 5000; i++) {
    const record = { [`user${i}`]: i, [`group${i}`]: i };
    assert.deepStrictEqual(direction.send([record]).value, [record]);
  }
  assert.equal(direction.defined, 0);
  const rows = [{ id: 1, name: "a" }, { id: 2, name: "b" }];
  assert.deepStrictEqual(direction.send(rows).value, rows);
  assert.equal(direction.defined, 1);
  // The shapes made stay: records of them still go by shape after many more such records.
  for (let i = 0; i < 5000; i++) direction.send([{ [`late${i}`]: i }]);
  const again = direction.send(rows);
  assert.deepStrictEqual(again.value, rows);
  assert.equal(direction.defined, 1);
  assert.ok(again.bytes.length < codec.encode(rows).length);
});

Deno.test("shapes hostile: a null-prototype record goes by shape, as docs/protocol.md §14 says", () => {
  const direction = new Direction();
  const bare = (i: number) => Object.assign(Object.create(null), { alpha: i, beta: "b" });
  const value = [bare(1), bare(2)];
  const plain = codec.encode(value).length;
  const first = direction.send(value);
  const second = direction.send(value);
  for (const { value: back } of [first, second]) {
    assert.deepStrictEqual(back, value);
    for (const record of back as object[]) assert.equal(Object.getPrototypeOf(record), null);
  }
  assert.equal(direction.defined, 1);
  assert.ok(second.bytes.length < plain, `${second.bytes.length} < ${plain}`);
});

Deno.test("shapes hostile: a record met once is sent with its keys, in any body", () => {
  // A value with `undefined` in it is written twice (a first pass finds it cannot go as it is):
  // its records are still met once each, so that a record never repeated takes no shape.
  const direction = new Direction();
  for (let i = 0; i < 20; i++) {
    const record = { [`once${i}`]: i, missing: undefined };
    assert.deepStrictEqual(direction.send([record]).value, [record]);
  }
  assert.equal(direction.defined, 0);
  // Met twice, in one body or in two, a record's keys make a shape.
  const twice = [{ a: 1, missing: undefined }, { a: 2, missing: undefined }];
  assert.deepStrictEqual(direction.send(twice).value, twice);
  assert.equal(direction.defined, 1);
});

Deno.test("shapes hostile: uncommitted() is the last encode's list, not a later one's", () => {
  const table = new ShapeEncoder();
  table.startEncode();
  assert.equal(table.shapeOf(["id"]), undefined);
  const none = table.uncommitted();
  assert.deepEqual(none, []);
  table.startEncode();
  const shape = table.shapeOf(["id"]);
  assert.equal(shape?.id, 0);
  assert.deepEqual(table.uncommitted(), [shape]);
  // What the first encode listed stays what it listed.
  assert.deepEqual(none, []);
});

Deno.test("shapes hostile: a refused definition leaves the table as it was", () => {
  const table = new ShapeDecoder({ maxTableBytes: 8 });
  table.define(0, ["ab", "cd"]);
  const refused = [
    () => table.define(1, ["ef", "ef"]), // a key twice
    () => table.define(1, ["efgh", "ij"]), // past maxTableBytes, after a key that fits
    () => table.define(0, ["x"]), // redefined
    () => table.define(1, ["x", 1 as unknown as string]), // a key that is no string
  ];
  for (const define of refused) assert.ok(thrown(define) instanceof ShapeError);
  assert.ok(thrown(() => table.keysOf(1)) instanceof ShapeError);
  // None of them took room: a shape within what was left still fits.
  table.define(1, ["efgh"]);
  assert.deepEqual(table.keysOf(0), ["ab", "cd"]);
  const record = new Uint8Array([0x92, 0xd4, STRUCTURED_EXT.shape, 1, 7]);
  assert.deepStrictEqual(codec.decodeShaped(record, table), { efgh: 7 });
});

Deno.test("shapes hostile: __proto__ and constructor keys are own data of a shaped record", () => {
  const table = new ShapeDecoder();
  table.define(0, ["__proto__", "constructor", "toString"]);
  const body = new Uint8Array([0x94, 0xd4, STRUCTURED_EXT.shape, 0, 0x81, 0xa1, 0x78, 1, 2, 3]);
  const record = codec.decodeShaped(body, table) as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(record), Object.prototype);
  assert.deepEqual(Object.keys(record), ["__proto__", "constructor", "toString"]);
  assert.deepStrictEqual(Object.getOwnPropertyDescriptor(record, "__proto__")?.value, { x: 1 });
  assert.equal(({} as Record<string, unknown>).x, undefined);
  // A wide shape's records are built another way: the same holds.
  const keys = ["__proto__", "constructor", ...Array.from({ length: 30 }, (_, i) => `k${i}`)];
  table.define(1, keys);
  const values = codec.encode([{ y: 1 }, ...keys.slice(1).map((_, i) => i)]).subarray(3);
  const wideBody = new Uint8Array([
    0xdc,
    0,
    keys.length + 1,
    0xd4,
    STRUCTURED_EXT.shape,
    1,
    ...values,
  ]);
  const wide = codec.decodeShaped(wideBody, table) as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(wide), Object.prototype);
  assert.deepEqual(Object.keys(wide), keys);
  assert.deepStrictEqual(Object.getOwnPropertyDescriptor(wide, "__proto__")?.value, { y: 1 });
  assert.equal(wide.constructor, 0);
  assert.equal(wide.k29, 30);
});

Deno.test("shapes hostile: a body that fails to decode leaves later bodies' values right", () => {
  const direction = new Direction();
  const rows = [{ id: 1, name: "a" }, { id: 2, name: "b" }];
  direction.send(rows);
  // Bodies a peer forges: a shape never defined, too few values, a mark in an ext 8 form.
  const forged = [
    [0x92, 0xd4, STRUCTURED_EXT.shape, 9, 1],
    [0x92, 0xd4, STRUCTURED_EXT.shape, 0, 1],
    [0x93, 0xc7, 1, STRUCTURED_EXT.shape, 0, 1, 2],
  ];
  for (const bytes of forged) {
    const err = thrown(() => codec.decodeShaped(new Uint8Array(bytes), direction.decoder));
    assert.ok(err instanceof CodecError, String(err));
  }
  assert.deepStrictEqual(direction.send(rows).value, rows);
  assert.equal(direction.defined, 1);
});

/**
 * The heap that what `run` keeps (in `kept`) holds, after `setup`, measured in a child where
 * `gc()` can be called. Both are code with the structured codec's exports in scope.
 */
async function heldHeap(setup: string, run: string): Promise<number> {
  const child = `
    import { ShapeDecoder, ShapeEncoder, STRUCTURED_EXT, structuredCodec } from ${
    JSON.stringify(new URL("./structured.ts", import.meta.url).href)
  };
    ${setup}
    let kept;
    globalThis.gc();
    const before = Deno.memoryUsage().heapUsed;
    ${run}
    globalThis.gc();
    console.log(Deno.memoryUsage().heapUsed - before, kept === undefined);
  `;
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--v8-flags=--expose-gc", child],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  const [held, none] = new TextDecoder().decode(stdout).trim().split(" ");
  assert.equal(none, "false", "run keeps nothing");
  return Number(held);
}

/** The heap a decoded body of records of a shape of `keys` keys holds per byte of it. */
async function heapPerByte(keys: number, records: number): Promise<number> {
  const setup = `
    const table = new ShapeDecoder();
    table.define(0, Array.from({ length: ${keys} }, (_, i) => "key" + i));
    // [[ext K 0, 1, 1, …], …]: a record of the shape costs its values' bytes alone.
    const record = [0xdc, 0, ${keys + 1}, 0xd4, STRUCTURED_EXT.shape, 0, ...Array(${keys}).fill(1)];
    const body = new Uint8Array(5 + ${records} * record.length);
    body.set([0xdd, 0, ${records} >> 16, (${records} >> 8) & 255, ${records} & 255]);
    for (let i = 0; i < ${records}; i++) body.set(record, 5 + i * record.length);
    const codec = structuredCodec();
  `;
  const bodyBytes = 5 + records * (keys + 6);
  return await heldHeap(setup, "kept = codec.decodeShaped(body, table);") / bodyBytes;
}

Deno.test("shapes hostile: records of a wide shape hold no more heap per byte than narrow ones", async () => {
  // A shape's records carry values only, so a peer's bytes go further than in maps: each
  // record must not be a dictionary object many times the size of a fast one.
  const narrow = await heapPerByte(4, 200_000);
  for (const keys of [24, 64]) {
    const wide = await heapPerByte(keys, Math.floor(4_000_000 / (keys + 4)));
    assert.ok(
      wide < Math.max(narrow, 8) * 1.5,
      `${keys} keys: ${wide} vs ${narrow} heap bytes per byte`,
    );
  }
});

Deno.test("shapes hostile: the sender's table keeps no key too long for a shape", async () => {
  // Records a handler echoes, each keyed by a long string its peer chose.
  const setup = `const table = new ShapeEncoder(); const long = "k".repeat(1 << 20);`;
  const run = `
    for (let i = 0; i < 32; i++) {
      table.startEncode();
      if (table.shapeOf([long + i]) !== undefined) throw new Error("a shape");
    }
    kept = table;
  `;
  const held = await heldHeap(setup, run);
  assert.ok(held < 4 << 20, `${held} bytes held for 32 keys of 1 MiB`);
});
