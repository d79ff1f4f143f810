// Values a user (or a peer) hands the JSON, MessagePack and structured codecs that would cross
// wrong in silence: each must cross exactly or be a CodecError.

import assert from "node:assert/strict";
import { CodecError } from "../errors.ts";
import { jsonCodec } from "./json.ts";
import { ExtData, msgpackCodec } from "./msgpack.ts";

const json = jsonCodec();

/** The CodecError `fn` throws; fails the test when it returns. */
function refused(fn: () => unknown): CodecError {
  let result: unknown;
  try {
    result = fn();
  } catch (err) {
    assert.ok(err instanceof CodecError, `not a CodecError: ${err}`);
    return err;
  }
  const got = result instanceof Uint8Array ? new TextDecoder().decode(result) : String(result);
  throw new assert.AssertionError({ message: `no error; got ${got}` });
}

Deno.test("codecs values hostile: JSON refuses what a toJSON() returns when JSON would change it", () => {
  class Money {
    readonly cents: number;
    constructor(cents: number) {
      this.cents = cents;
    }
    toJSON(): unknown {
      return { cents: this.cents, tags: new Set(["x"]) };
    }
  }
  const cases: Array<[string, unknown, RegExp]> = [
    [
      "a Map",
      { a: { toJSON: () => new Map([[1, 2]]) } },
      /\$\.a\.toJSON\(\) is an instance of Map/,
    ],
    ["NaN", { a: { toJSON: () => NaN } }, /\$\.a\.toJSON\(\) is NaN/],
    ["a function", { a: { toJSON: () => () => 1 } }, /\$\.a\.toJSON\(\) is a function/],
    ["undefined in an array", [{ toJSON: () => undefined }], /\$\[0\]\.toJSON\(\) is undefined/],
    [
      "a Set deep inside",
      { price: new Money(5) },
      /\$\.price\.toJSON\(\)\.tags is an instance of Set/,
    ],
    [
      "a Date (written as {})",
      { a: { toJSON: () => new Date(0) } },
      /\$\.a\.toJSON\(\) is an instance of Date/,
    ],
    ["an Infinity at the top", { toJSON: () => Infinity }, /\$\.toJSON\(\) is Infinity/],
  ];
  for (const [name, value, message] of cases) {
    const err = refused(() => json.encode(value));
    assert.match(err.message, message, name);
  }
  // What JSON writes exactly still crosses, the key argument as JSON passes it.
  const keyed = { k: { toJSON: (key: string) => key }, list: [{ toJSON: (key: string) => key }] };
  assert.deepStrictEqual(json.decode(json.encode(keyed)), { k: "k", list: ["0"] });
  // A toJSON() returning undefined in an object leaves the property out, as undefined does.
  assert.deepStrictEqual(json.decode(json.encode({ a: 1, b: { toJSON: () => undefined } })), {
    a: 1,
  });
  // JSON calls no toJSON() of what a toJSON() returns: that one is a function property it drops.
  const twice = { a: { toJSON: () => ({ x: 1, toJSON: () => "inner" }) } };
  assert.match(
    refused(() => json.encode(twice)).message,
    /\$\.a\.toJSON\(\)\.toJSON is a function/,
  );
  // Lossy lets JSON have its way.
  const lossy = jsonCodec({ lossy: true });
  assert.deepStrictEqual(lossy.decode(lossy.encode({ a: { toJSON: () => NaN } })), { a: null });
});

Deno.test("codecs values hostile: JSON refuses an invalid Date of a Date subclass", () => {
  class Stamp extends Date {}
  const err = refused(() => json.encode({ at: new Stamp(NaN) }));
  assert.match(err.message, /\$\.at is an invalid Date/);
  assert.deepStrictEqual(json.decode(json.encode({ at: new Stamp(0) })), {
    at: "1970-01-01T00:00:00.000Z",
  });
});

Deno.test("codecs values hostile: JSON refuses a symbol-keyed property rather than drop it", () => {
  const tag = Symbol("tag");
  const err = refused(() => json.encode({ nested: [{ id: 1, [tag]: "x" }] }));
  assert.match(err.message, /\$\.nested\[0\] has a symbol key \(Symbol\(tag\)\)/);
  // A non-enumerable symbol key is no data, as a non-enumerable string key is not.
  const hidden = Object.defineProperty({ id: 1 }, tag, { value: "x", enumerable: false });
  assert.deepStrictEqual(json.decode(json.encode(hidden)), { id: 1 });
  const lossy = jsonCodec({ lossy: true });
  assert.deepStrictEqual(lossy.decode(lossy.encode({ id: 1, [tag]: "x" })), { id: 1 });
});

Deno.test("codecs values hostile: an ExtData payload that is no Uint8Array is refused, not zeros", () => {
  // Uint8Array.set would write a string's characters (and any non-number) as zero bytes.
  for (const data of ["ab", [1, 2], new ArrayBuffer(2), new Uint16Array([1])]) {
    assert.throws(() => new ExtData(5, data as unknown as Uint8Array), TypeError, String(data));
  }
  const codec = msgpackCodec();
  const back = codec.decode(codec.encode(new ExtData(5, new Uint8Array([0x61])))) as ExtData;
  assert.deepStrictEqual([...back.data], [0x61]);
});
