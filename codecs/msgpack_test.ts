import assert from "node:assert/strict";
import { decode as referenceDecode, encode as referenceEncode } from "@msgpack/msgpack";
import fc from "fast-check";
import { CodecError } from "../errors.ts";
import { codecConformance } from "./_conformance.ts";
import {
  DEFAULT_MSGPACK_MAX_DEPTH,
  ExtData,
  MSGPACK_EXT_BIGINT,
  MSGPACK_EXT_MAP,
  MSGPACK_EXT_SET,
  msgpackCodec,
} from "./msgpack.ts";
import { cyclic, thrown, withoutNegativeZero } from "./_test_util.ts";

const codec = msgpackCodec();
const bytes = (...values: number[]): Uint8Array => new Uint8Array(values);
const ascii = (text: string): number[] => [...new TextEncoder().encode(text)];

/** Nested so that the leaf sits at level `depth` (the top-level value is level 1). */
function nested(depth: number): unknown {
  let value: unknown = 0;
  for (let i = 1; i < depth; i++) value = i % 2 === 0 ? [value] : { v: value };
  return value;
}

codecConformance<unknown>({
  codec,
  samples: [
    {
      name: "record",
      value: { id: 1, name: "conduit", ok: true, none: null, pi: 3.14159, n: -123456789 },
    },
    { name: "array", value: [1, "two", [3, { four: 4 }], false, 2 ** 40, -(2 ** 40), 0.5] },
    { name: "string", value: "hello" },
    { name: "small int", value: 7 },
    { name: "date", value: new Date("2024-05-06T07:08:09.010Z") },
    { name: "date before 1970", value: new Date(-1234567890123) },
    { name: "map with object keys", value: new Map<unknown, unknown>([[{ k: 1 }, "a"], [2, [3]]]) },
    { name: "set", value: new Set([1, "x", null]) },
    { name: "bigints", value: [0n, 1n, -1n, 2n ** 64n, -(2n ** 200n) + 7n, 127n, 128n, -128n] },
    { name: "bytes", value: new Uint8Array([0, 1, 255]) },
    {
      name: "mixed",
      value: {
        at: new Date(0),
        tags: new Set(["a"]),
        index: new Map([["k", { deep: [1n, new Uint8Array([9])] }]]),
      },
    },
  ],
  empty: ["", [], {}, new Map(), new Set(), new Uint8Array(0)],
  nested,
  maxDepth: DEFAULT_MSGPACK_MAX_DEPTH,
  unicode: (text) => ({ text }),
  // A lone surrogate has no UTF-8 form: encode refuses it (tested in _msgpack_writer_test.ts).
  loneSurrogates: false,
  binary: (data) => ({ data }),
  large: () => ({
    blob: new Uint8Array(8 * 1024 * 1024).fill(0x5a),
    lines: Array.from({ length: 8 * 1024 }, (_, i) => `${i}:${"msgpack ✓ 𝄞 ".repeat(80)}`),
  }),
  arbitrary: arbitraryValue(),
  unencodable: [
    { name: "function", value: () => 1 },
    { name: "nested symbol", value: { s: Symbol("s") } },
    { name: "cycle", value: cyclic() },
    { name: "invalid date", value: new Date(NaN) },
    { name: "one level too deep", value: nested(DEFAULT_MSGPACK_MAX_DEPTH + 1) },
    { name: "function inside a Map", value: new Map([["f", () => 1]]) },
  ],
  undecodable: [
    { name: "empty input", bytes: bytes() },
    { name: "never-used byte 0xc1", bytes: bytes(0xc1) },
    { name: "two values", bytes: bytes(0x01, 0x02) },
    { name: "string header past the end", bytes: bytes(0xa5, 0x61) },
    { name: "invalid UTF-8", bytes: bytes(0xa2, 0xc3, 0x28) },
    { name: "an encoded surrogate", bytes: bytes(0xa3, 0xed, 0xa0, 0x80) },
    { name: "timestamp with nanoseconds", bytes: bytes(0xd7, 0xff, 0, 0, 0, 0x04, 0, 0, 0, 0) },
    {
      name: "timestamp past Date's range",
      bytes: bytes(0xc7, 12, 0xff, 0, 0, 0, 0, 0, 0, 0x08, 0, 0, 0, 0, 0),
    },
    {
      name: "timestamp with 10^9 nanoseconds",
      bytes: bytes(0xc7, 12, 0xff, 0x3b, 0x9a, 0xca, 0x00, 0, 0, 0, 0, 0, 0, 0, 0),
    },
    { name: "empty bigint", bytes: bytes(0xc7, 0x00, MSGPACK_EXT_BIGINT) },
    { name: "Map with an odd item count", bytes: bytes(0xc7, 0x02, MSGPACK_EXT_MAP, 0x91, 0x01) },
    { name: "Set payload not an array", bytes: bytes(0xd4, MSGPACK_EXT_SET, 0x01) },
    { name: "Set payload truncated", bytes: bytes(0xd5, MSGPACK_EXT_SET, 0x92, 0x01) },
    { name: "timestamp of 1 byte", bytes: bytes(0xd4, 0xff, 0x00) },
    { name: "array announcing 2^32-1 items", bytes: bytes(0xdd, 0xff, 0xff, 0xff, 0xff, 0x01) },
    { name: "bin announcing 4 GiB", bytes: bytes(0xc6, 0xff, 0xff, 0xff, 0xff) },
  ],
});

Deno.test("codec/msgpack: extension types have the documented wire form", () => {
  const cases: Array<[unknown, Uint8Array]> = [
    [new Map([["a", 1]]), bytes(0xd6, MSGPACK_EXT_MAP, 0x92, 0xa1, 0x61, 0x01)],
    [new Set([1, 2]), bytes(0xc7, 0x03, MSGPACK_EXT_SET, 0x92, 0x01, 0x02)],
    [1n, bytes(0xd4, 0x42, 0x01)],
    [-1n, bytes(0xd4, 0x42, 0xff)],
    [128n, bytes(0xd5, 0x42, 0x00, 0x80)],
    [-129n, bytes(0xd5, 0x42, 0xff, 0x7f)],
    [2n ** 64n, bytes(0xc7, 0x09, 0x42, 0x01, 0, 0, 0, 0, 0, 0, 0, 0)],
    [new Date(0), bytes(0xd6, 0xff, 0, 0, 0, 0)],
    [new Uint8Array([1, 2]), bytes(0xc4, 0x02, 0x01, 0x02)],
  ];
  for (const [value, wire] of cases) {
    assert.deepStrictEqual(codec.encode(value), wire, String(value));
    assert.deepStrictEqual(codec.decode(wire), value);
  }
});

Deno.test("codec/msgpack: plain values match the reference encoding both ways", () => {
  fc.assert(
    fc.property(fc.jsonValue().map(withoutNegativeZero), (value) => {
      assert.deepStrictEqual(codec.encode(value), referenceEncode(value));
      assert.deepStrictEqual(codec.decode(referenceEncode(value)), value);
    }),
    { numRuns: 200 },
  );
  // A Map payload is a MessagePack document any library reads.
  const payload = codec.encode(new Map([["a", 1]])).subarray(2); // after fixext4 and the type
  assert.deepStrictEqual(referenceDecode(payload), ["a", 1]);
});

Deno.test("codec/msgpack: a __proto__ key stays data and never changes a prototype", () => {
  const proto = ascii("__proto__");
  const polluted = [0x81, 0xa8, ...ascii("polluted"), 0xc3];
  const inputs = [
    bytes(0x82, 0xa9, ...proto, ...polluted, 0xa1, 0x61, 0x01), // fixstr key
    bytes(0x82, 0xd9, 0x09, ...proto, ...polluted, 0xa1, 0x61, 0x01), // str8 key
  ];
  for (const input of inputs) {
    const decoded = codec.decode(input) as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(decoded), Object.prototype);
    assert.deepStrictEqual(Object.keys(decoded), ["__proto__", "a"]);
    assert.deepStrictEqual(Object.getOwnPropertyDescriptor(decoded, "__proto__"), {
      value: { polluted: true },
      writable: true,
      enumerable: true,
      configurable: true,
    });
    assert.equal((decoded as { polluted?: unknown }).polluted, undefined);
    assert.equal(({} as { polluted?: unknown }).polluted, undefined);
    assert.deepStrictEqual(codec.encode(decoded), inputs[0]);
  }
  const nullProto = codec.decode(bytes(0x81, 0xa9, ...proto, 0xc0)) as object;
  assert.equal(Object.getPrototypeOf(nullProto), Object.prototype);
  assert.ok(Object.hasOwn(nullProto, "__proto__"));
  // An own "__proto__" property (as JSON.parse makes) survives a round trip, at any depth.
  const value = JSON.parse('[{"__proto__":{"x":1}},{"m":{"__proto__":[2]}}]');
  const again = codec.decode(codec.encode(new Map([["v", value]]))) as Map<string, unknown>;
  assert.deepStrictEqual(again.get("v"), value);
  assert.equal(Object.getPrototypeOf((again.get("v") as object[])[0]), Object.prototype);
  // The marker standing in for the key never leaks into values.
  assert.equal(codec.decode(bytes(0xa9, ...proto)), "__proto__");
  assert.deepStrictEqual(codec.decode(bytes(0x91, 0xa9, ...proto)), ["__proto__"]);
});

Deno.test("codec/msgpack: decoding limits are CodecErrors that name the limit", () => {
  const limited = msgpackCodec({
    maxStrLength: 3,
    maxBinLength: 3,
    maxArrayLength: 3,
    maxMapLength: 3,
    maxExtLength: 3,
  });
  const cases: Array<[unknown, RegExp]> = [
    ["abcd", /maxStrLength \(3\)/],
    [new Uint8Array(4), /maxBinLength \(3\)/],
    [[1, 2, 3, 4], /maxArrayLength \(3\)/],
    [{ a: 1, b: 2, c: 3, d: 4 }, /\(3\)/],
    [2n ** 40n, /maxExtLength \(3\)/],
  ];
  for (const [value, message] of cases) {
    const err = thrown(() => limited.decode(codec.encode(value)));
    assert.ok(err instanceof CodecError, String(value));
    assert.equal(err.operation, "decode");
    assert.match(err.message, message);
  }
  assert.deepStrictEqual(limited.decode(codec.encode(["abc", [1, 2, 3]])), ["abc", [1, 2, 3]]);
});

Deno.test("codec/msgpack: maxDepth bounds arrays, objects and Map/Set nesting", () => {
  const shallow = msgpackCodec({ maxDepth: 4 });
  assert.deepStrictEqual(shallow.decode(shallow.encode(nested(4))), nested(4));
  const err = thrown(() => shallow.encode(nested(5)));
  assert.ok(err instanceof CodecError);
  assert.equal(err.operation, "encode");
  assert.match(err.message, /maxDepth \(4\)/);

  let maps: unknown = 1;
  for (let i = 0; i < 6; i++) maps = new Map([["m", maps]]);
  assert.ok(thrown(() => shallow.encode(maps)) instanceof CodecError);
  const deepBytes = msgpackCodec({ maxDepth: 10 }).encode(maps);
  const decodeErr = thrown(() => shallow.decode(deepBytes));
  assert.ok(decodeErr instanceof CodecError);
  assert.match(decodeErr.message, /maxDepth \(4\)/);
  assert.deepStrictEqual(msgpackCodec({ maxDepth: 10 }).decode(deepBytes), maps);
});

Deno.test("codec/msgpack: Map/Set nesting far past the limit is a CodecError, not a crash", () => {
  // 300 Sets, each the only member of the next: three times the default maxDepth.
  let value: Uint8Array = bytes(0x90);
  for (let i = 0; i < 300; i++) {
    const header = value.length < 256
      ? [0xc7, value.length + 1]
      : [0xc8, (value.length + 1) >> 8, (value.length + 1) & 0xff];
    value = bytes(...header, MSGPACK_EXT_SET, 0x91, ...value);
  }
  const err = thrown(() => codec.decode(value));
  assert.ok(err instanceof CodecError);
  assert.match(err.message, /maxDepth \(100\)/);
});

Deno.test("codec/msgpack: a __proto__ key at every level of nested Map/Set payloads", () => {
  let value: unknown = 0;
  for (let i = 0; i < DEFAULT_MSGPACK_MAX_DEPTH - 10; i++) {
    value = new Set([value, JSON.parse('{"__proto__":1}')]);
  }
  assert.deepStrictEqual(codec.decode(codec.encode(value)), value);
});

Deno.test("codec/msgpack: a codec keeps working after a failure", () => {
  assert.ok(thrown(() => codec.encode(new Map([["f", () => 1]]))) instanceof CodecError);
  assert.ok(
    thrown(() => codec.decode(bytes(0xd6, MSGPACK_EXT_MAP, 0x92, 0xa1))) instanceof CodecError,
  );
  const value = new Map([["ok", new Set([1n])]]);
  assert.deepStrictEqual(codec.decode(codec.encode(value)), value);
});

Deno.test("codec/msgpack: documented lossy cases", () => {
  assert.deepStrictEqual(codec.decode(codec.encode({ u: undefined, z: -0 })), { u: null, z: 0 });
  // A foreign uint64 above 2^53 decodes as a bigint, never as the nearest number.
  const big = bytes(0xcf, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01);
  assert.equal(codec.decode(big), 2n ** 53n + 1n);
  // Unknown extension types pass through as ExtData.
  const ext = codec.decode(bytes(0xd4, 0x30, 0x07)) as { type: number; data: Uint8Array };
  assert.equal(ext.type, 0x30);
  assert.deepStrictEqual(ext.data, bytes(0x07));
  assert.deepStrictEqual(codec.encode(ext), bytes(0xd4, 0x30, 0x07));
});

Deno.test('codec/msgpack: bigint: "int" writes plain ints where 64 bits hold the value', () => {
  const ints = msgpackCodec({ bigint: "int" });
  const cases: Array<[bigint, Uint8Array, unknown]> = [
    [5n, bytes(0x05), 5],
    [-33n, bytes(0xd0, 0xdf), -33],
    [2n ** 53n, bytes(0xcf, 0x00, 0x20, 0, 0, 0, 0, 0, 0), 2n ** 53n],
    [2n ** 64n - 1n, bytes(0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), 2n ** 64n - 1n],
    [-(2n ** 63n), bytes(0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0), -(2n ** 63n)],
    [2n ** 64n, bytes(0xc7, 0x09, 0x42, 0x01, 0, 0, 0, 0, 0, 0, 0, 0), 2n ** 64n],
  ];
  for (const [value, wire, decoded] of cases) {
    assert.deepStrictEqual(ints.encode(value), wire, String(value));
    assert.strictEqual(ints.decode(wire), decoded);
  }
  // The default keeps the bigint's type: 5n needs its extension to come back as 5n.
  assert.strictEqual(codec.decode(codec.encode(5n)), 5n);
});

Deno.test("codec/msgpack: timestamps decode exactly or fail; subMillisecond: truncate", () => {
  const ts64 = (seconds: number, nanoseconds: number): Uint8Array => {
    const b = bytes(0xd7, 0xff, 0, 0, 0, 0, 0, 0, 0, 0);
    const view = new DataView(b.buffer);
    view.setUint32(2, nanoseconds * 4 + Math.floor(seconds / 2 ** 32));
    view.setUint32(6, seconds >>> 0);
    return b;
  };
  const ts96 = (seconds: bigint, nanoseconds: number): Uint8Array => {
    const b = bytes(0xc7, 12, 0xff, ...new Array(12).fill(0));
    const view = new DataView(b.buffer);
    view.setUint32(3, nanoseconds);
    view.setBigInt64(7, seconds);
    return b;
  };
  const truncating = msgpackCodec({ subMillisecond: "truncate" });
  assert.deepStrictEqual(codec.decode(ts64(1, 5_000_000)), new Date(1005));
  assert.deepStrictEqual(codec.decode(ts96(-1n, 500_000_000)), new Date(-500));
  assert.deepStrictEqual(codec.decode(ts96(8_640_000_000_000n, 0)), new Date(8.64e15));
  assert.deepStrictEqual(codec.decode(ts96(-8_640_000_000_000n, 0)), new Date(-8.64e15));
  for (const tooFar of [ts96(8_640_000_000_001n, 0), ts96(-8_640_000_000_001n, 0)]) {
    assert.match(String(thrown(() => truncating.decode(tooFar))), /outside the range of Date/);
  }
  const micro = ts64(1, 5_123_000);
  const err = thrown(() => codec.decode(micro));
  assert.ok(err instanceof CodecError);
  assert.match(err.message, /Timestamp 1 s \+ 5123000 ns has a part finer than a millisecond/);
  assert.deepStrictEqual(truncating.decode(micro), new Date(1005));
  assert.deepStrictEqual(truncating.decode(ts96(-1n, 999_999_999)), new Date(-1));
});

Deno.test('codec/msgpack: invalidUtf8: "replace" puts U+FFFD in place of bad bytes', () => {
  const bad = bytes(0xa4, 0x61, 0xff, 0xc3, 0x62);
  assert.match(String(thrown(() => codec.decode(bad))), /Invalid UTF-8 in a string at byte 2/);
  assert.equal(msgpackCodec({ invalidUtf8: "replace" }).decode(bad), "a\ufffd\ufffdb");
});

Deno.test("codec/msgpack: options are validated", () => {
  assert.throws(() => msgpackCodec({ bigint: "number" as "int" }), /bigint must be "ext" or "int"/);
  assert.throws(() => msgpackCodec({ invalidUtf8: "drop" as "replace" }), TypeError);
  assert.throws(() => msgpackCodec({ subMillisecond: "round" as "truncate" }), TypeError);
  assert.throws(() => msgpackCodec({ maxDepth: 0 }), RangeError);
  assert.throws(() => msgpackCodec({ maxStrLength: -1 }), RangeError);
  assert.throws(() => msgpackCodec({ maxArrayLength: 1.5 }), RangeError);
  assert.throws(() => msgpackCodec({ maxMapLength: 2 ** 32 }), /maxMapLength/);
});

/** Values the msgpack codec round trips exactly (no -0, no undefined, no lone surrogates). */
function arbitraryValue(): fc.Arbitrary<unknown> {
  const leaf = fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.maxSafeInteger(),
    fc.double().filter((n) => !Object.is(n, -0)),
    fc.string({ unit: "grapheme" }),
    fc.bigInt(),
    fc.date({ noInvalidDate: true }),
    fc.uint8Array({ maxLength: 64 }),
  );
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      leaf,
      tie("array"),
      tie("object"),
      tie("map"),
      tie("set"),
    ),
    array: fc.array(tie("value"), { maxLength: 5 }),
    object: fc.dictionary(fc.string(), tie("value"), { maxKeys: 5, noNullPrototype: true }),
    map: fc.array(fc.tuple(tie("value"), tie("value")), { maxLength: 4 }).map((e) => new Map(e)),
    set: fc.array(tie("value"), { maxLength: 4 }).map((e) => new Set(e)),
  }));
  return value;
}

Deno.test("codec/msgpack: an ExtData type outside -128..127 is refused, not wrapped", () => {
  // MessagePack has one byte for it: 200 would be written as -56, 1.5 as 1.
  for (const type of [200, -129, 1.5, NaN]) {
    assert.throws(() => new ExtData(type, new Uint8Array([1])), RangeError, String(type));
  }
  const codec = msgpackCodec();
  for (const type of [-128, 127]) {
    const back = codec.decode(codec.encode(new ExtData(type, new Uint8Array([1])))) as ExtData;
    assert.equal(back.type, type);
  }
});
