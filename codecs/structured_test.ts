import assert from "node:assert/strict";
import fc from "fast-check";
import { RemoteError } from "../channel/errors.ts";
import { CodecError } from "../errors.ts";
import { codecConformance } from "./_conformance.ts";
import { ExtData, msgpackCodec } from "./msgpack.ts";
import { DEFAULT_STRUCTURED_MAX_DEPTH, STRUCTURED_EXT, structuredCodec } from "./structured.ts";
import { structuredLeaf, thrown } from "./_test_util.ts";

const codec = structuredCodec();
const bytes = (...values: number[]): Uint8Array => new Uint8Array(values);

/** Nested so that the leaf sits at level `depth` (the top-level value is level 1). */
function nested(depth: number): unknown {
  let value: unknown = 0;
  for (let i = 1; i < depth; i++) {
    value = i % 3 === 0 ? new Set([value]) : i % 2 ? [value] : { v: value };
  }
  return value;
}

/** Values of every kind the codec keeps, nested in each other. */
function arbitraryValue(): fc.Arbitrary<unknown> {
  const leaf = structuredLeaf();
  return fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      leaf,
      fc.array(tie("value"), { maxLength: 4 }),
      fc.dictionary(fc.string(), tie("value"), { maxKeys: 4 }),
      fc.array(fc.tuple(tie("value"), tie("value")), { maxLength: 3 }).map((e) => new Map(e)),
      fc.array(tie("value"), { maxLength: 3 }).map((m) => new Set(m)),
    ),
  })).value;
}

codecConformance<unknown>({
  codec,
  samples: [
    { name: "record", value: { id: 1, name: "conduit", ok: true, none: null, missing: undefined } },
    { name: "array", value: [1, "two", [3, { four: 4 }], false, undefined, -0, NaN, Infinity] },
    { name: "string", value: "hello" },
    { name: "undefined", value: undefined },
    { name: "negative zero", value: -0 },
    { name: "date", value: new Date("2024-05-06T07:08:09.010Z") },
    { name: "invalid date", value: new Date(NaN) },
    { name: "map with object keys", value: new Map<unknown, unknown>([[{ k: 1 }, "a"], [2, [3]]]) },
    { name: "set with undefined", value: new Set([1, "x", null, undefined]) },
    { name: "bigints", value: [0n, -1n, 2n ** 64n, -(2n ** 200n) + 7n] },
    { name: "bytes", value: new Uint8Array([0, 1, 255]) },
    {
      name: "typed arrays",
      value: [
        new Int8Array([-1, 2]),
        new Uint8ClampedArray([255]),
        new Int16Array([-300]),
        new Uint16Array([65535]),
        new Int32Array([-1]),
        new Uint32Array([2 ** 32 - 1]),
        new Float32Array([1.5]),
        new Float64Array([-0, NaN]),
        new BigInt64Array([-5n]),
        new BigUint64Array([2n ** 64n - 1n]),
        new DataView(new Uint8Array([1, 2, 3]).buffer, 1, 2),
        new Uint8Array([4, 5]).buffer,
      ],
    },
    { name: "lone surrogate", value: { text: "a\uD800b".repeat(40) } },
    {
      name: "mixed",
      value: {
        at: new Date(0),
        tags: new Set(["a", undefined]),
        index: new Map([["k", { deep: [1n, new Uint8Array([9]), new Float32Array([2])] }]]),
      },
    },
  ],
  empty: ["", [], {}, new Map(), new Set(), new Uint8Array(0), new Float64Array(0)],
  nested,
  maxDepth: DEFAULT_STRUCTURED_MAX_DEPTH,
  unicode: (text) => ({ text, list: [text], byKey: new Map([[text, text]]) }),
  loneSurrogates: true,
  binary: (data) => ({ data, copy: new Uint8Array(data) }),
  large: () => ({
    blob: new Uint8Array(8 * 1024 * 1024).fill(0x5a),
    samples: new Float64Array(256 * 1024).fill(0.25),
    lines: Array.from({ length: 4 * 1024 }, (_, i) => `${i}:${"structured ✓ 𝄞 ".repeat(80)}`),
  }),
  arbitrary: arbitraryValue(),
  unencodable: [
    { name: "function", value: () => 1 },
    { name: "nested symbol", value: { s: Symbol("s") } },
    { name: "symbol key", value: { [Symbol("k")]: 1 } },
    {
      name: "class instance",
      value: {
        at: new (class Point {
          x = 1;
        })(),
      },
    },
    { name: "Map subclass", value: new (class Registry extends Map {})() },
    { name: "promise", value: [Promise.resolve(1)] },
    { name: "regexp", value: /x/ },
    {
      name: "cycle",
      value: (() => {
        const a: { self?: unknown } = {};
        a.self = a;
        return a;
      })(),
    },
    { name: "one level too deep", value: nested(DEFAULT_STRUCTURED_MAX_DEPTH + 1) },
    { name: "function inside a Map", value: new Map([["f", () => 1]]) },
    {
      name: "function inside an error's data",
      value: Object.assign(new Error("x"), { data: [() => 1] }),
    },
  ],
  undecodable: [
    { name: "empty input", bytes: bytes() },
    { name: "never-used byte 0xc1", bytes: bytes(0xc1) },
    { name: "two values", bytes: bytes(0x01, 0x02) },
    { name: "a bare revive mark", bytes: bytes(0xc7, 0x00, STRUCTURED_EXT.revive) },
    {
      name: "unknown extension in a revived value",
      bytes: bytes(0x92, 0xc7, 0, STRUCTURED_EXT.revive, 0xc7, 0, 0x7f),
    },
    {
      name: "typed array of an unknown kind",
      bytes: bytes(0x92, 0xc7, 0, STRUCTURED_EXT.revive, 0xd4, STRUCTURED_EXT.typed, 0xee),
    },
    {
      name: "Float64Array of 3 bytes",
      bytes: bytes(0x92, 0xc7, 0, STRUCTURED_EXT.revive, 0xd6, STRUCTURED_EXT.typed, 7, 0, 0, 0),
    },
    {
      name: "UTF-16 of odd length",
      bytes: bytes(0x92, 0xc7, 0, STRUCTURED_EXT.revive, 0xd4, STRUCTURED_EXT.wtf16, 0x41),
    },
    {
      name: "error without a message",
      bytes: bytes(0x92, 0xc7, 0, STRUCTURED_EXT.revive, 0x92, 0xc7, 0, STRUCTURED_EXT.error, 0x80),
    },
  ],
});

Deno.test("codec/structured: each kind keeps its class and contents", () => {
  const value = {
    nothing: undefined,
    none: null,
    negZero: -0,
    odd: [NaN, Infinity, -Infinity],
    at: new Date(1_700_000_000_123),
    never: new Date(NaN),
    byKey: new Map<unknown, unknown>([[undefined, 1], [new Date(5), new Set([undefined])]]),
    big: -(2n ** 100n),
    floats: new Float32Array([1.25, -0]),
    longs: new BigUint64Array([2n ** 63n]),
    view: new DataView(new Uint8Array([9, 8, 7, 6]).buffer, 1, 2),
    buffer: new Uint8Array([1, 2, 3]).buffer,
    dict: Object.assign(
      Object.create(null) as Record<string, number>,
      JSON.parse('{"a":1,"__proto__":2}'),
    ),
  };
  const decoded = codec.decode(codec.encode(value)) as typeof value;
  assert.deepStrictEqual(decoded, value);
  assert.ok("nothing" in decoded && decoded.nothing === undefined);
  assert.ok(Object.is(decoded.negZero, -0));
  assert.ok(decoded.floats instanceof Float32Array && Object.is(decoded.floats[1], -0));
  assert.ok(decoded.view instanceof DataView);
  assert.deepStrictEqual([...new Uint8Array(decoded.view.buffer)], [8, 7]);
  assert.ok(decoded.buffer instanceof ArrayBuffer);
  assert.ok(Number.isNaN(decoded.never.getTime()));
  assert.deepStrictEqual([...decoded.byKey.keys()], [undefined, new Date(5)]);
  assert.equal(Object.getPrototypeOf(decoded.dict), null);
  assert.deepStrictEqual(Object.keys(decoded.dict), ["a", "__proto__"]);
});

Deno.test("codec/structured: a value needing no extension is plain MessagePack", () => {
  const value = { id: 7, tags: ["a"], at: new Date(0), ids: new Set([1]), blob: bytes(1, 2) };
  assert.deepStrictEqual(codec.encode(value), msgpackCodec().encode(value));
  assert.deepStrictEqual(codec.decode(msgpackCodec().encode(value)), value);
});

Deno.test("codec/structured: errors arrive as RemoteError with the channel's fields", () => {
  const cause = new RangeError("inner");
  const error = Object.assign(new TypeError("outer", { cause }), {
    code: "E_OUTER",
    data: { limit: 3n, when: new Date(1) },
    ignored: "other properties are dropped, as from a thrown error",
  });
  class QuotaError extends Error {
    override name = "QuotaError";
  }
  const decoded = codec.decode(codec.encode({ error, list: [new QuotaError("over")] })) as {
    error: RemoteError;
    list: RemoteError[];
  };
  assert.ok(decoded.error instanceof RemoteError);
  assert.equal(decoded.error.name, "TypeError");
  assert.equal(decoded.error.message, "outer");
  assert.equal(decoded.error.code, "E_OUTER");
  assert.deepStrictEqual(decoded.error.data, { limit: 3n, when: new Date(1) });
  assert.equal(decoded.error.remoteStack, undefined, "no stack unless asked");
  assert.ok(decoded.error.cause instanceof RemoteError);
  assert.equal((decoded.error.cause as RemoteError).name, "RangeError");
  assert.equal((decoded.error as unknown as { ignored?: string }).ignored, undefined);
  assert.equal(decoded.list[0].name, "QuotaError");
  assert.equal(decoded.list[0].message, "over");

  const trusted = structuredCodec({ stack: true });
  const withStack = trusted.decode(trusted.encode(error)) as RemoteError;
  assert.equal(withStack.remoteStack, error.stack);
  // A revived error crosses again with the same fields and its original stack.
  const again = trusted.decode(trusted.encode(withStack)) as RemoteError;
  assert.equal(again.remoteStack, error.stack);
  assert.equal(again.code, "E_OUTER");
});

Deno.test("codec/structured: refusals name the path inside the value", () => {
  const cases: Array<[unknown, string]> = [
    [{ items: [0, 1, 2, { callback: () => 1 }] }, "$.items[3].callback is a function"],
    [{ "a key": Symbol("s") }, '$["a key"] is a symbol'],
    [{ m: new Map([["k", { f() {} }]]) }, '$.m.get("k").f is a function'],
    [{ m: new Map([[{ f: Symbol() }, 1]]) }, "$.m.keys()[0].f is a symbol"],
    [new Set([1, new (class Point {})()]), "$.values()[1] is an instance of Point"],
    [{ e: Object.assign(new Error("x"), { data: { f: () => 1 } }) }, "$.e.data.f is a function"],
    [{ b: new (class Bytes extends Uint8Array {})(2) }, "$.b is an instance of Bytes (a subclass"],
    [{ [Symbol("k")]: 1 }, "$ is an object with a symbol key"],
    [{ "a\uD800": 1 }, '$["a\\ud800"] is a key with unpaired surrogates'],
  ];
  for (const [value, message] of cases) {
    const err = thrown(() => codec.encode(value));
    assert.ok(err instanceof CodecError, message);
    assert.equal(err.codec, "structured");
    assert.equal(err.operation, "encode");
    assert.ok(err.message.includes(message), `${err.message} should include ${message}`);
    // encodeView refuses the same way, and the codec works afterwards.
    assert.throws(() => codec.encodeView!(value), CodecError);
    assert.deepStrictEqual(codec.decode(codec.encode({ ok: undefined })), { ok: undefined });
  }
});

Deno.test("codec/structured: a cycle is reported where it closes", () => {
  const root: { child: { back?: unknown } } = { child: {} };
  root.child.back = [root];
  const err = thrown(() => codec.encode(root));
  assert.ok(err instanceof CodecError);
  assert.match(err.message, /\$\.child\.back\[0\] is a cycle: the same object as \$$/);
});

Deno.test("codec/structured: the value given is never changed", () => {
  const inner = { u: undefined, n: -0 };
  const value = { list: [1, inner], map: new Map([["k", inner]]), set: new Set([undefined]) };
  const snapshot = structuredClone(value);
  codec.encode(value);
  assert.deepStrictEqual(value, snapshot);
  assert.equal(value.list[1], inner);
});

Deno.test("codec/structured: maxDepth is checked on construction", () => {
  for (const maxDepth of [0, 1.5, 10_001]) {
    assert.throws(() => structuredCodec({ maxDepth }), RangeError);
  }
  const shallow = structuredCodec({ maxDepth: 2 });
  assert.deepStrictEqual(shallow.decode(shallow.encode([1])), [1]);
  assert.throws(() => shallow.encode([[1]]), CodecError);
});

/** A codec that encodes its next values by the careful path: one value not as it is first. */
function carefulCodec() {
  const careful = structuredCodec();
  careful.encode([undefined]);
  return careful;
}

Deno.test("codec/structured: one pass writes the careful path's very bytes", () => {
  fc.assert(
    fc.property(arbitraryValue(), (value) => {
      let fast: Uint8Array | CodecError;
      try {
        fast = structuredCodec().encode(value);
      } catch (err) {
        fast = err as CodecError;
      }
      let careful: Uint8Array | CodecError;
      try {
        careful = carefulCodec().encode(value);
      } catch (err) {
        careful = err as CodecError;
      }
      if (careful instanceof CodecError) {
        assert.ok(fast instanceof CodecError);
        assert.equal(fast.message, careful.message);
      } else assert.deepStrictEqual(fast, careful);
    }),
    { numRuns: 500 },
  );
  // What JSON has no form for goes the careful way, each at any depth.
  for (const odd of [undefined, -0, [1, , 3], "a\uD800", Object.create(null), new Error("x")]) {
    for (const value of [{ deep: [{ odd }] }, [1, "two", { three: [odd] }]]) {
      const back = codec.decode(structuredCodec().encode(value));
      assert.deepStrictEqual(back, carefulCodec().decode(carefulCodec().encode(value)));
      assert.deepStrictEqual(structuredCodec().encode(value), carefulCodec().encode(value));
    }
  }
});

Deno.test("codec/structured: after a value not as it is, 8 encodes go the careful way", () => {
  let reads = 0;
  const value = {
    get x() {
      reads++;
      return 1;
    },
  };
  const readsOf = (codec: ReturnType<typeof structuredCodec>) => {
    reads = 0;
    codec.encode(value);
    return reads;
  };
  const fresh = structuredCodec();
  assert.equal(readsOf(fresh), 1, "written in one pass");
  fresh.encode({ u: undefined });
  for (let i = 0; i < 8; i++) assert.equal(readsOf(fresh), 2, "prepared, then written");
  assert.equal(readsOf(fresh), 1, "one pass again");
  // A top-level undefined goes the careful way without a first pass, and without backing off.
  fresh.encode(undefined);
  assert.equal(readsOf(fresh), 1);
});

Deno.test("codec/structured: shaped bodies, one pass or careful, decode as plain ones do", () => {
  // Records of one shape, some holding what only the careful path writes (so the one-pass
  // attempt gives up midway and backs off), sent in order through one direction's tables.
  const record = fc.record({ a: arbitraryValue(), b: fc.integer() }, { requiredKeys: [] });
  const body = fc.oneof(record, fc.array(record, { maxLength: 4 }));
  fc.assert(
    fc.property(fc.array(body, { minLength: 1, maxLength: 30 }), (bodies) => {
      const sending = codec.shapeEncoder();
      const receiving = codec.shapeDecoder();
      for (const value of bodies) {
        const encoded = codec.encodeShaped(value, sending).slice();
        for (const shape of sending.uncommitted()) {
          if (sending.commit(shape)) receiving.define(shape.id, shape.keys);
        }
        assert.deepStrictEqual(
          codec.decodeShaped(encoded, receiving),
          codec.decode(codec.encode(value)),
        );
      }
    }),
    { numRuns: 200 },
  );
});

Deno.test("codec/structured: a key with a lone surrogate is refused on every encode, shaped or not", () => {
  // The one-pass attempt after the careful path's back-off once sent such a record by shape,
  // its keys never checked: the peer would have read U+FFFD for the key.
  const shapes = codec.shapeEncoder();
  for (let i = 0; i < 12; i++) {
    assert.throws(() => codec.encodeShaped({ "\ud800": i }, shapes), CodecError);
  }
  assert.equal(shapes.uncommitted().length, 0);
});

Deno.test("codec/structured: an extension outside the codec's wrapper is refused wherever it sits", () => {
  // A peer that leaves out the wrapper must not get values through unchecked.
  const plain = msgpackCodec();
  for (
    const value of [
      new ExtData(9, new Uint8Array([1])),
      { a: new ExtData(9, new Uint8Array([1])) },
      [new ExtData(0x55, new Uint8Array(0))],
      [1, [2, { deep: new ExtData(-5, new Uint8Array(2)) }]],
    ]
  ) assert.throws(() => codec.decode(plain.encode(value)), CodecError);
  // Its own values, wrapped, still come back.
  const odd = { a: undefined, m: new Map([[1, 2]]) };
  assert.deepStrictEqual(codec.decode(codec.encode(odd)), odd);
});
