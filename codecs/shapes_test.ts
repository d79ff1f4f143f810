import assert from "node:assert/strict";
import fc from "fast-check";
import { CodecError, ShapeError } from "../errors.ts";
import { msgpackCodec } from "./msgpack.ts";
import { ShapeDecoder, ShapeEncoder, STRUCTURED_EXT, structuredCodec } from "./structured.ts";
import { Direction, structuredLeaf, thrown } from "./_test_util.ts";

const codec = structuredCodec();

const row = (i: number) => ({ id: i, name: `item ${i}`, price: i * 1.5, tags: ["a", "b"] });

Deno.test("shapes: a record's keys are sent once, later records carry only values", () => {
  const direction = new Direction();
  const rows = Array.from({ length: 10 }, (_, i) => row(i));
  const plain = codec.encode(rows).length;
  const first = direction.send(rows);
  const second = direction.send(rows);
  assert.deepStrictEqual(first.value, rows);
  assert.deepStrictEqual(second.value, rows);
  assert.equal(direction.defined, 1);
  // The first row is sent with its keys (the shape is made at the second).
  assert.ok(first.bytes.length < plain, `${first.bytes.length} < ${plain}`);
  assert.ok(second.bytes.length < first.bytes.length);
  assert.ok(second.bytes.length < plain * 0.75, `${second.bytes.length} vs ${plain}`);
});

Deno.test("shapes: nested records, null prototypes and __proto__ keys keep their meaning", () => {
  const direction = new Direction();
  const proto = JSON.parse('{"__proto__": 1, "x": {"k": 2}}');
  const bare = Object.assign(Object.create(null), { a: 1 });
  const value = [
    { outer: { inner: { leaf: -0 } }, missing: undefined },
    { outer: { inner: { leaf: 2n } }, missing: undefined },
    proto,
    proto,
    bare,
    bare,
    { "1": "integer-like", b: 2 },
    { "1": "integer-like", b: 3 },
  ];
  for (let round = 0; round < 3; round++) {
    const back = direction.send(value).value as unknown[];
    assert.deepStrictEqual(back, value);
    assert.equal(Object.getPrototypeOf(back[2]), Object.prototype);
    assert.equal(Object.getPrototypeOf(back[4]), null);
    assert.deepEqual(Object.keys(back[6] as object), ["1", "b"]);
  }
});

Deno.test("shapes: a shape first used by a dropped body is defined by the next body that uses it", () => {
  const direction = new Direction();
  const dropped = direction.encode([row(1), row(2)]);
  assert.equal(dropped.shapes.length, 1);
  const sent = direction.send([row(3)]);
  assert.deepStrictEqual(sent.value, [row(3)]);
  assert.equal(direction.defined, 1);
  // A body encoded before the one that defined it, sent after: its definition is not repeated.
  const late = direction.encode([row(4)]);
  direction.deliver(dropped);
  assert.deepStrictEqual(direction.deliver(late), [row(4)]);
  assert.equal(direction.defined, 1);
});

/** Records of few shapes, so that shapes repeat, holding any value the codec keeps. */
function shapedValue(): fc.Arbitrary<unknown> {
  const key = fc.constantFrom("id", "name", "price", "tags", "__proto__", "1", "é", "");
  const leaf = structuredLeaf();
  return fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      leaf,
      fc.array(tie("value"), { maxLength: 5 }),
      fc.uniqueArray(fc.tuple(key, tie("value")), { selector: ([k]) => k, maxLength: 4 }).map(
        (entries) => {
          const record: Record<string, unknown> = {};
          for (const [k, v] of entries) {
            Object.defineProperty(record, k, {
              value: v,
              enumerable: true,
              writable: true,
              configurable: true,
            });
          }
          return record;
        },
      ),
      fc.array(tie("value"), { maxLength: 2 }).map((m) => new Set(m)),
      fc.array(fc.tuple(tie("value"), tie("value")), { maxLength: 2 }).map((e) => new Map(e)),
    ),
  })).value;
}

Deno.test("shapes: any values round-trip whichever bodies are dropped or sent late", () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(shapedValue(), fc.constantFrom("send", "drop", "late")), {
        maxLength: 12,
      }),
      fc.record({
        maxShapes: fc.integer({ min: 1, max: 6 }),
        maxTableBytes: fc.integer({ min: 1, max: 40 }),
      }),
      (messages, limits) => {
        const direction = new Direction(limits);
        const late: Array<{ body: ReturnType<Direction["encode"]>; value: unknown }> = [];
        for (const [value, fate] of messages) {
          const body = direction.encode(value);
          if (fate === "send") assert.deepStrictEqual(direction.deliver(body), value);
          else if (fate === "late") late.push({ body, value });
        }
        // Bodies held back (a call queued, a batch) are written after later ones.
        for (const { body, value } of late.reverse()) {
          assert.deepStrictEqual(direction.deliver(body), value);
        }
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("shapes: the encoder stays within the limits a decoder enforces", () => {
  const limits = { maxShapes: 3, maxKeysPerShape: 2, maxKeyBytes: 4, maxTableBytes: 10 };
  const direction = new Direction(limits);
  const records = [
    { a: 1 },
    { a: 1, b: 2 },
    { a: 1, b: 2, c: 3 }, // too many keys
    { long_: 1 }, // a key too long
    { abcd: 1, efgh: 2 }, // past the table's bytes
    { x: 1 },
    { y: 1 },
  ];
  const value = [...records, ...records];
  assert.deepStrictEqual(direction.send(value).value, value);
  assert.deepStrictEqual(direction.send(value).value, value);
  assert.equal(direction.defined, 3);
});

Deno.test("shapes: a hostile peer's definitions are refused, naming the limit", () => {
  const table = new ShapeDecoder({ maxShapes: 2, maxKeyBytes: 3, maxTableBytes: 5 });
  const message = (fn: () => unknown) => {
    const err = thrown(fn);
    assert.ok(err instanceof ShapeError, String(err));
    return err.message;
  };
  assert.equal(
    message(() => table.define(2, ["a"])),
    "Shape id 2 is outside the table: ids are below maxShapes (2)",
  );
  assert.equal(
    message(() => table.define(0, [])),
    "Shape 0 has 0 keys, where a shape has 1 to maxKeysPerShape (64)",
  );
  assert.equal(
    message(() => table.define(0, ["abcd"])),
    "Shape 0 has a key of 4 bytes, over maxKeyBytes (3)",
  );
  assert.equal(message(() => table.define(0, ["a", "a"])), 'Shape 0 has the key "a" twice');
  table.define(0, ["abc"]);
  assert.equal(message(() => table.define(0, ["b"])), "Shape 0 is defined twice");
  assert.equal(
    message(() => table.define(1, ["de", "f"])),
    "Shape 1 takes the table to 6 key bytes, over maxTableBytes (5)",
  );
  assert.equal(message(() => table.keysOf(1)), "A body uses shape 1, which the peer never defined");
  const big = new ShapeDecoder({ maxKeysPerShape: 1 });
  assert.match(message(() => big.define(0, ["a", "b"])), /2 keys, .* maxKeysPerShape \(1\)/);
  assert.throws(() => new ShapeDecoder({ maxShapes: 0x10001 }), RangeError);
});

Deno.test("shapes: a body using an unknown shape, or malformed, is a CodecError", () => {
  const msgpack = msgpackCodec();
  /** `[ext K(id), values…]` built by hand, wrapped as `[ext R, …]` or not. */
  const body = (id: number[], values: unknown[], wrapped = false) => {
    const mark = id.length === 1
      ? [0xd4, STRUCTURED_EXT.shape]
      : id.length === 2
      ? [0xd5, STRUCTURED_EXT.shape]
      : [0xc7, id.length, STRUCTURED_EXT.shape];
    const record = [
      0x90 + values.length + 1,
      ...mark,
      ...id,
      ...values.flatMap((v) => [...msgpack.encode(v)]),
    ];
    return new Uint8Array(wrapped ? [0x92, 0xc7, 0, STRUCTURED_EXT.revive, ...record] : record);
  };
  const table = new ShapeDecoder();
  table.define(0, ["a", "b"]);
  table.define(0x123, ["c"]);
  assert.deepStrictEqual(codec.decodeShaped(body([0], [1, 2]), table), { a: 1, b: 2 });
  assert.deepStrictEqual(codec.decodeShaped(body([0], [1, 2], true), table), { a: 1, b: 2 });
  assert.deepStrictEqual(codec.decodeShaped(body([0, 0], [1, 2]), table), { a: 1, b: 2 });
  assert.deepStrictEqual(codec.decodeShaped(body([0x01, 0x23], [3]), table), { c: 3 });
  const cause = (bytes: Uint8Array, shapes?: ShapeDecoder) => {
    const err = thrown(() => shapes ? codec.decodeShaped(bytes, shapes) : codec.decode(bytes));
    assert.ok(err instanceof CodecError, String(err));
    return err.cause as Error;
  };
  const unknown = cause(body([1], [1, 2]), table);
  assert.ok(unknown instanceof ShapeError);
  assert.equal(unknown.message, "A body uses shape 1, which the peer never defined");
  for (const wrapped of [false, true]) {
    const unshaped = cause(body([0], [1, 2], wrapped));
    assert.ok(unshaped instanceof ShapeError);
    assert.equal(unshaped.message, "A record of shape 0 where the channel uses no shapes");
  }
  assert.equal(
    cause(body([0], [1]), table).message,
    "A record has 1 values for the 2 keys of its shape",
  );
  // A mark is a fixext 1 or 2: in any other form it is an unknown extension.
  assert.match(cause(body([0, 0, 0], [1, 2], true), table).message, /Unknown extension type 75/);
});

Deno.test("shapes: no shape is made whose SHAPE frame would exceed the peer's maxFrameBytes", () => {
  const table = new ShapeEncoder({ maxFrameBytes: 20 });
  const long = { abcdefgh: 1, ijklmnop: 2 }; // 1 + 1 + 1 + 9 + 9 = 21 bytes of SHAPE frame
  const short = { a: 1, b: 2 }; // 7 bytes
  table.startEncode();
  for (let i = 0; i < 3; i++) assert.equal(table.shapeOf(Object.keys(long)), undefined);
  table.shapeOf(Object.keys(short));
  assert.equal(table.shapeOf(Object.keys(short))?.id, 0);
  assert.deepEqual(
    structuredCodec().shapeEncoder({ maxFrameBytes: 20 }) instanceof ShapeEncoder,
    true,
  );
});
