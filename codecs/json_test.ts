import assert from "node:assert/strict";
import fc from "fast-check";
import { CodecError } from "../errors.ts";
import { codecConformance } from "./_conformance.ts";
import { jsonCodec } from "./json.ts";
import { openChannel } from "../channel/channel.ts";
import { memoryPair } from "../transports/memory.ts";
import { cyclic, thrown, withoutNegativeZero } from "./_test_util.ts";

const codec = jsonCodec();
const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

codecConformance<unknown>({
  codec,
  samples: [
    { name: "object", value: { id: 1, name: "conduit", ok: true, none: null, pi: 3.14159 } },
    { name: "array", value: [1, "two", [3, { four: 4 }], false] },
    { name: "string", value: "hello" },
    { name: "true", value: true },
    { name: "null", value: null },
    // `12` cut to `1` is valid JSON: a bare number may only fail to round trip.
    { name: "bare number", value: 1234.5, truncated: "differs" },
    { name: "unicode keys", value: { "ключ": "值", "😀": ["\u0000"] } },
  ],
  empty: ["", [], {}],
  nested: (depth) => {
    let value: unknown = 0;
    for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { v: value };
    return value;
  },
  unicode: (text) => ({ text }),
  loneSurrogates: true,
  large: () => {
    const line = "conduit ✓ 𝄞 ".repeat(64).slice(0, 1000);
    return { lines: Array.from({ length: 16 * 1024 }, (_, i) => `${i}:${line}`) };
  },
  arbitrary: fc.jsonValue({ stringUnit: "binary" }).map(withoutNegativeZero),
  unencodable: [
    { name: "bigint", value: 1n },
    { name: "nested bigint", value: { a: [2n] } },
    { name: "cycle", value: cyclic() },
    { name: "top-level undefined", value: undefined },
    { name: "top-level function", value: () => 1 },
    { name: "top-level symbol", value: Symbol("s") },
    { name: "Map", value: { counts: new Map([["a", 1]]) } },
    { name: "NaN", value: [NaN] },
  ],
  undecodable: [
    { name: "empty input", bytes: new Uint8Array(0) },
    { name: "whitespace only", bytes: utf8(" \n") },
    { name: "invalid UTF-8 byte", bytes: new Uint8Array([0x22, 0xff, 0x22]) },
    { name: "UTF-8 encoded surrogate", bytes: new Uint8Array([0x22, 0xed, 0xa0, 0x80, 0x22]) },
    { name: "overlong UTF-8", bytes: new Uint8Array([0x22, 0xc0, 0xaf, 0x22]) },
    { name: "two values", bytes: utf8("1 2") },
    { name: "trailing garbage", bytes: utf8("{}x") },
    { name: "trailing comma", bytes: utf8("[1,]") },
    { name: "single quotes", bytes: utf8("'a'") },
    { name: "NaN literal", bytes: utf8("NaN") },
  ],
});

Deno.test("codec/json: with lossy, what JSON cannot say comes back as documented", () => {
  const codec = jsonCodec({ lossy: true });
  const date = new Date("2024-01-02T03:04:05.678Z");
  const value = {
    date,
    map: new Map([["a", 1]]),
    set: new Set([1]),
    bytes: new Uint8Array([7, 8]),
    nan: NaN,
    inf: -Infinity,
    negZero: -0,
    undef: undefined,
    list: [undefined, () => 1],
  };
  assert.deepStrictEqual(codec.decode(codec.encode(value)), {
    date: "2024-01-02T03:04:05.678Z",
    map: {},
    set: {},
    bytes: { "0": 7, "1": 8 },
    nan: null,
    inf: null,
    negZero: 0,
    list: [null, null],
  });
});

Deno.test("codec/json: values JSON would change are refused, naming their path", () => {
  class Point {
    readonly x: number;
    constructor(x: number) {
      this.x = x;
    }
  }
  const holey: unknown[] = [1];
  holey[2] = 3;
  const cases: [unknown, string][] = [
    [{ counts: new Map([["a", 1]]) }, "$.counts is an instance of Map, which JSON writes as {}"],
    [{ ids: [new Set([1])] }, "$.ids[0] is an instance of Set, which JSON writes as {}"],
    [{ b: new Uint8Array([7]) }, '$.b is an instance of Uint8Array, which JSON writes as {"0":7}'],
    [new Float64Array(1), "$ is an instance of Float64Array"],
    [{ buf: new ArrayBuffer(2) }, "$.buf is an instance of ArrayBuffer, which JSON writes as {}"],
    [{ p: new Point(1) }, '$.p is an instance of Point, which JSON writes as {"x":1}'],
    [{ err: new RangeError("x") }, "$.err is an error (RangeError), which JSON writes as {}"],
    [{ "odd key": NaN }, '$["odd key"] is NaN, which JSON writes as null'],
    [{ n: [1, -Infinity] }, "$.n[1] is -Infinity, which JSON writes as null"],
    [{ list: [1, undefined] }, "$.list[1] is undefined, which JSON writes as null"],
    [holey, "$[1] is a hole, which JSON writes as null"],
    [{ onDone: function done() {} }, "$.onDone is a function (done), which JSON drops"],
    [{ tag: Symbol("t") }, "$.tag is a symbol (Symbol(t)), which JSON drops"],
    [{ at: new Date(NaN) }, "$.at is an invalid Date, which JSON writes as null"],
    [{ a: { b: [{ c: 5n }] } }, "$.a.b[0].c is a bigint (5n), which JSON cannot write"],
    [Object.assign(Object.create(null), { m: new Map() }), "$.m is an instance of Map"],
  ];
  for (const [value, expected] of cases) {
    for (const encode of [codec.encode, codec.encodeView!]) {
      const err = thrown(() => encode.call(codec, value));
      assert.ok(err instanceof CodecError, expected);
      assert.equal(err.operation, "encode");
      assert.ok(err.cause instanceof TypeError);
      assert.ok(err.message.startsWith(`json codec could not encode: ${expected}`), err.message);
      assert.match(err.message, /jsonCodec\(\{ lossy: true \}\)/);
    }
  }
  const cycle = thrown(() => codec.encode(cyclic()));
  assert.ok(cycle instanceof CodecError);
  assert.match(cycle.message, /circular/);
});

Deno.test("codec/json: toJSON objects, missing properties and -0 still cross", () => {
  const withToJson = { secret: () => 1, toJSON: () => ({ shown: true }) };
  class Money {
    readonly cents: bigint;
    constructor(cents: bigint) {
      this.cents = cents;
    }
    toJSON(): string {
      return `${this.cents}`;
    }
  }
  const value = {
    at: new Date("2024-01-02T03:04:05.678Z"),
    withToJson,
    price: new Money(5n),
    optional: undefined,
    negZero: -0,
    bare: Object.assign(Object.create(null), { a: [1, "x", null, false] }),
  };
  assert.deepStrictEqual(codec.decode(codec.encode(value)), {
    at: "2024-01-02T03:04:05.678Z",
    withToJson: { shown: true },
    price: "5",
    negZero: 0,
    bare: { a: [1, "x", null, false] },
  });
});

Deno.test("codec/json: a handler's Map reaches the caller as a CodecError, not {}", async () => {
  const handlers = { counts: (): Map<string, number> => new Map([["a", 1]]) };
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openChannel(a, { codec: jsonCodec(), handlers }),
    openChannel<typeof handlers>(b, { codec: jsonCodec() }),
  ]);
  try {
    const err = await client.remote.counts().then(() => undefined, (err: unknown) => err);
    assert.ok(err instanceof Error, `resolved instead of failing`);
    assert.match(err.message, /\$ is an instance of Map, which JSON writes as \{\}/);
  } finally {
    await Promise.all([client.close(), server.close()]);
  }
});

Deno.test("codec/json: a __proto__ key stays an own data property", () => {
  const decoded = codec.decode(utf8('{"__proto__":{"polluted":true},"a":1}')) as Record<
    string,
    unknown
  >;
  assert.equal(Object.getPrototypeOf(decoded), Object.prototype);
  assert.deepStrictEqual(Object.getOwnPropertyDescriptor(decoded, "__proto__")?.value, {
    polluted: true,
  });
  assert.equal((decoded as { polluted?: boolean }).polluted, undefined);
  assert.equal(({} as { polluted?: boolean }).polluted, undefined);
  assert.deepStrictEqual(codec.decode(codec.encode(decoded)), decoded);
});

Deno.test("codec/json: errors name the codec, the operation and the cause", () => {
  const err = thrown(() => codec.decode(utf8("{")));
  assert.ok(err instanceof CodecError);
  assert.equal(err.codec, "json");
  assert.equal(err.operation, "decode");
  assert.ok(err.cause instanceof SyntaxError);
  const bad = new Uint8Array([0x22, 0xff, 0x22]);
  const utfErr = thrown(() => codec.decode(bad));
  assert.ok(utfErr instanceof CodecError && utfErr.cause instanceof TypeError);
  const encErr = thrown(() => codec.encode(cyclic()));
  assert.ok(encErr instanceof CodecError);
  assert.equal(encErr.operation, "encode");
});

Deno.test("codec/json: a leading byte order mark is ignored", () => {
  assert.deepStrictEqual(codec.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x5b, 0x5d])), []);
});

Deno.test("codec/json: encodeView grows its scratch for longer and wider texts", () => {
  const view = jsonCodec<unknown>();
  const values = [
    { a: 1 }, // the first call makes a 4 KiB scratch
    { wide: "✓".repeat(2_000) }, // fewer units than 4096, but 6000 bytes: encodeInto stops short
    { ascii: "x".repeat(10_000) }, // more units than the scratch has bytes
    { a: 2 },
    { huge: "é".repeat(2_000_000) }, // past the scratch limit: bytes of its own
    { a: 3 },
  ];
  for (const value of values) {
    const expected = codec.encode(value);
    const bytes = view.encodeView!(value);
    assert.equal(bytes.length, expected.length);
    assert.ok(bytes.every((byte, i) => byte === expected[i]), `${Object.keys(value)[0]}`);
    assert.deepStrictEqual(codec.decode(bytes.slice()), value);
  }
});

Deno.test("codec/json: a U+FFFD in valid UTF-8 decodes; invalid UTF-8 is a CodecError", () => {
  assert.equal(codec.decode(utf8('"a\uFFFDb"')), "a\uFFFDb");
  assert.deepStrictEqual(codec.decode(utf8('["\uFFFD","é"]')), ["\uFFFD", "é"]);
  for (
    const bad of [[0x22, 0xef, 0xbf, 0x22], [0x22, 0xf0, 0x9f, 0x98, 0x22], [0x22, 0x80, 0x22]]
  ) {
    const err = thrown(() => codec.decode(new Uint8Array(bad)));
    assert.ok(err instanceof CodecError && err.cause instanceof TypeError, `${bad}`);
  }
});
