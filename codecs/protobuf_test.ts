import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { parse } from "protobufjs";
import { CodecError } from "../errors.ts";
import { codecConformance } from "./_conformance.ts";
import { protobufCodec } from "./protobuf.ts";

const PROTO = `
syntax = "proto3";
package test;

enum Color { COLOR_UNSPECIFIED = 0; RED = 1; GREEN = 2; }

message Leaf { string text = 1; bytes data = 2; }

message Everything {
  int32 i32 = 1;
  uint32 u32 = 2;
  sint32 s32 = 3;
  int64 i64 = 4;
  uint64 u64 = 5;
  sint64 s64 = 6;
  fixed64 f64 = 7;
  double d = 8;
  float f = 9;
  bool flag = 10;
  string text = 11;
  bytes data = 12;
  Color color = 13;
  repeated string tags = 14;
  repeated Leaf leaves = 15;
  map<string, int64> counts = 16;
  Leaf leaf = 17;
  optional string note = 18;
  oneof choice { string name = 19; int32 number = 20; }
  Everything child = 21;
}
`;

type Everything = Record<string, unknown>;

const codec = protobufCodec<Everything>({ proto: PROTO, type: "test.Everything" });

/** The object decode gives for a message with these fields set. */
function full(fields: Everything): Everything {
  return {
    i32: 0,
    u32: 0,
    s32: 0,
    i64: 0n,
    u64: 0n,
    s64: 0n,
    f64: 0n,
    d: 0,
    f: 0,
    flag: false,
    text: "",
    data: new Uint8Array(0),
    color: 0,
    tags: [],
    leaves: [],
    counts: {},
    leaf: null,
    child: null,
    ...fields,
  };
}

/** `depth` messages, each the child of the one above. */
function nested(depth: number): Everything {
  let value = full({ i32: depth });
  for (let i = 1; i < depth; i++) value = full({ child: value });
  return value;
}

codecConformance<Everything>({
  codec,
  samples: [
    {
      name: "scalars",
      value: full({
        i32: -5,
        u32: 4_000_000_000,
        s32: -2_000_000_000,
        i64: -(2n ** 63n),
        u64: 2n ** 64n - 1n,
        s64: -123456789012345n,
        f64: 42n,
        d: Math.PI,
        f: 1.5,
        flag: true,
        text: "héllo 𝄞",
        data: new Uint8Array([0, 1, 255]),
        color: 2,
      }),
    },
    {
      name: "collections",
      value: full({
        tags: ["a", "", "c"],
        leaves: [
          { text: "x", data: new Uint8Array([1]) },
          { text: "", data: new Uint8Array(0) },
        ],
        counts: { a: 1n, b: -(2n ** 40n) },
        leaf: { text: "solo", data: new Uint8Array(0) },
      }),
    },
    { name: "optional and oneof", value: full({ note: "", name: "chosen" }) },
    { name: "oneof number", value: full({ number: 0 }) },
    { name: "child", value: nested(3) },
  ],
  empty: [full({})],
  nested,
  maxDepth: 101,
  unicode: (text) => full({ text }),
  binary: (data) => full({ data }),
  large: () =>
    full({
      data: new Uint8Array(8 * 1024 * 1024).fill(7),
      tags: Array.from({ length: 8 * 1024 }, (_, i) => `${i}:${"protobuf ✓ ".repeat(100)}`),
    }),
  // A message cut at a field boundary is a valid, shorter message.
  truncated: "differs",
  unencodable: [
    { name: "not an object", value: 7 },
    { name: "array", value: [] },
    { name: "string for int32", value: { i32: "1" } },
    { name: "int32 out of range", value: { i32: 2 ** 31 } },
    { name: "fraction", value: { i32: 1.5 } },
    { name: "negative uint32", value: { u32: -1 } },
    { name: "number for int64", value: { i64: 1 } },
    { name: "int64 out of range", value: { i64: 2n ** 63n } },
    { name: "negative uint64", value: { u64: -1n } },
    { name: "uint64 out of range", value: { u64: 2n ** 64n } },
    { name: "unknown field", value: { nope: 1 } },
    { name: "two oneof members", value: { name: "a", number: 1 } },
    { name: "lone surrogate", value: { text: "a\uD800" } },
    // Color is an open (proto3) enum: 9 is encodable (see the open-enum test), these are not.
    { name: "unknown enum name", value: { color: "PURPLE" } },
    { name: "enum number not an int32", value: { color: 2 ** 31 } },
    { name: "enum number not an integer", value: { color: 1.5 } },
    { name: "array for bytes", value: { data: [1, 2] } },
    { name: "bad repeated element", value: { tags: ["a", 1] } },
    { name: "bad nested field", value: { leaves: [{ text: 1 }] } },
    { name: "bad map value", value: { counts: { a: 1 } } },
    { name: "one level too deep", value: nested(102) },
  ],
  undecodable: [
    { name: "truncated varint", bytes: new Uint8Array([0x08]) },
    { name: "invalid wire type", bytes: new Uint8Array([0x0f]) },
    { name: "length past the end", bytes: new Uint8Array([0x5a, 0x05, 0x61]) },
    { name: "invalid UTF-8 in a string", bytes: new Uint8Array([0x5a, 0x02, 0xff, 0xfe]) },
    { name: "unterminated group", bytes: new Uint8Array([0x0b]) },
    { name: "nested past the recursion limit", bytes: deepChildren(150) },
  ],
});

Deno.test("codec/protobuf: int64 as decimal strings", () => {
  const strings = protobufCodec({ proto: PROTO, type: "test.Everything", int64: "string" });
  const value = full({
    i64: "-9223372036854775808",
    u64: "18446744073709551615",
    s64: "0",
    f64: "7",
    counts: { k: "-1" },
  });
  assert.deepStrictEqual(strings.decode(strings.encode(value)), value);
  assert.deepStrictEqual(codec.decode(strings.encode(value)).u64, 2n ** 64n - 1n);
  for (const bad of [{ i64: 5n }, { i64: "1e3" }, { i64: "01" }, { u64: "-1" }]) {
    assert.throws(() => strings.encode(bad), CodecError);
  }
});

Deno.test("codec/protobuf: the wire format is protobufjs's own", () => {
  const type = parse(PROTO).root.lookupType("test.Everything");
  const value = full({ i32: 150, text: "testing", tags: ["a"], color: 1 });
  const bytes = codec.encode(value);
  assert.equal(bytes.constructor, Uint8Array);
  assert.deepStrictEqual(
    [...bytes],
    [
      ...type.encode(type.fromObject({ i32: 150, text: "testing", tags: ["a"], color: 1 }))
        .finish(),
    ],
  );
  assert.deepStrictEqual(bytes.subarray(0, 3), new Uint8Array([0x08, 0x96, 0x01])); // i32 = 150
  // Enum names encode like their numbers.
  assert.deepStrictEqual(codec.encode(full({ color: "RED" })), codec.encode(full({ color: 1 })));
});

Deno.test("codec/protobuf: bytes fields decode as plain Uint8Array, even from a Buffer", () => {
  const encoded = codec.encode(full({ data: new Uint8Array([5, 6]), leaf: { text: "t" } }));
  const decoded = codec.decode(Buffer.from(encoded));
  assert.equal((decoded.data as Uint8Array).constructor, Uint8Array);
  assert.deepStrictEqual(decoded.data, new Uint8Array([5, 6]));
  assert.equal(((decoded.leaf as Everything).data as Uint8Array).constructor, Uint8Array);
  assert.equal((codec.decode(new Uint8Array(0)).data as Uint8Array).constructor, Uint8Array);
});

Deno.test("codec/protobuf: schema inputs, names and construction errors", () => {
  const root = parse(PROTO).root;
  const leafType = root.lookupType("test.Leaf");
  const fromRoot = protobufCodec({ proto: root, type: "test.Leaf" });
  const fromType = protobufCodec({ proto: leafType });
  assert.equal(fromRoot.name, "protobuf:test.Leaf");
  assert.equal(fromType.name, "protobuf:test.Leaf");
  const leaf = { text: "x", data: new Uint8Array([1]) };
  assert.deepStrictEqual(fromType.decode(fromRoot.encode(leaf)), leaf);

  const snake = `syntax = "proto3"; message S { string user_name = 1; }`;
  assert.deepStrictEqual(
    protobufCodec({ proto: snake, type: "S" }).decode(new Uint8Array([0x0a, 0x01, 0x61])),
    { userName: "a" },
  );
  assert.deepStrictEqual(
    protobufCodec({ proto: snake, type: "S", keepCase: true }).decode(
      new Uint8Array([0x0a, 0x01, 0x61]),
    ),
    { user_name: "a" },
  );
  assert.throws(() => protobufCodec({ proto: "message {", type: "X" }), TypeError);
  assert.throws(() => protobufCodec({ proto: PROTO, type: "test.Missing" }), /test\.Missing/);
  assert.throws(() => protobufCodec({ proto: PROTO }), TypeError);
});

Deno.test("codec/protobuf: verify false trusts the value", () => {
  const trusting = protobufCodec({ proto: PROTO, type: "test.Everything", verify: false });
  const bytes = trusting.encode({ text: "ok", unknownField: 1 } as Everything);
  assert.equal(codec.decode(bytes).text, "ok");
  assert.throws(() => codec.encode({ text: "ok", unknownField: 1 }), CodecError);
});

Deno.test("codec/protobuf: errors name the codec and the field", () => {
  try {
    codec.encode({ leaves: [{ text: "a" }, { text: 2 }] });
    assert.fail("expected a CodecError");
  } catch (err) {
    assert.ok(err instanceof CodecError);
    assert.equal(err.codec, "protobuf:test.Everything");
    assert.equal(err.operation, "encode");
    assert.match(err.message, /leaves\[1\]\.text: string expected, got number 2/);
  }
});

/** Bytes of `depth` nested `child` messages (field 21, wire type 2). */
function deepChildren(depth: number): Uint8Array {
  let inner: number[] = [];
  for (let i = 0; i < depth; i++) inner = [0xaa, 0x01, ...varint(inner.length), ...inner];
  return new Uint8Array(inner);
}

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

const OLD = `syntax = "proto3"; package ver;
enum Kind { KIND_UNSPECIFIED = 0; A = 1; }
message Inner { string name = 1; }
message Msg { int64 id = 1; Inner inner = 2; repeated Inner list = 3; map<string, Inner> byName = 4; Kind kind = 5; repeated Kind kinds = 6; }`;
const NEW = `syntax = "proto3"; package ver;
enum Kind { KIND_UNSPECIFIED = 0; A = 1; B = 2; C = 3; }
message Inner { string name = 1; sint64 added = 9; }
message Extra { string s = 1; }
message Msg { int64 id = 1; Inner inner = 2; repeated Inner list = 3; map<string, Inner> byName = 4; Kind kind = 5; repeated Kind kinds = 6;
  string note = 7; Extra extra = 8; repeated fixed32 nums = 10; double d = 11; }`;

Deno.test("codec/protobuf: unknown fields survive decode then encode, at every level", () => {
  const newer = protobufCodec({ proto: NEW, type: "ver.Msg" });
  for (const verify of [true, false]) {
    const older = protobufCodec({ proto: OLD, type: "ver.Msg", verify });
    const value = {
      id: 2n ** 60n,
      inner: { name: "i", added: -5n },
      list: [{ name: "l0", added: 1n }, { name: "l1", added: 0n }],
      byName: { k: { name: "m", added: 7n } },
      kind: 3,
      kinds: [1, 2, 3],
      note: "from a newer schema",
      extra: { s: "x" },
      nums: [1, 2, 4294967295],
      d: 0.5,
    };
    const bytes = newer.encode(value);
    const seen = older.decode(bytes) as Record<string, unknown>;
    // The older schema shows its own fields; open enum numbers it does not list stay numbers.
    assert.deepStrictEqual(Object.keys(seen).sort(), [
      "byName",
      "id",
      "inner",
      "kind",
      "kinds",
      "list",
    ]);
    assert.equal(seen.kind, 3);
    assert.deepStrictEqual(seen.kinds, [1, 2, 3]);
    assert.ok(!("note" in seen) && JSON.stringify(seen.inner) === '{"name":"i"}');
    // Re-encoded by the older schema (verify on: the enum numbers pass), nothing is lost.
    assert.deepStrictEqual(newer.decode(older.encode(seen as never)), value, `verify ${verify}`);
    // An edit to a known field keeps the unknown ones.
    const edited = { ...seen, id: 1n };
    Object.defineProperty(edited, "$unknowns", Object.getOwnPropertyDescriptor(seen, "$unknowns")!);
    assert.deepStrictEqual(newer.decode(older.encode(edited as never)), { ...value, id: 1n });
  }
});

Deno.test("codec/protobuf: a closed (proto2) enum keeps an unlisted value as an unknown field", () => {
  const proto2 = (values: string): string =>
    `syntax = "proto2"; enum E { ${values} } message M { optional E e = 1; optional int32 n = 2; }`;
  const older = protobufCodec({ proto: proto2("X = 1;"), type: "M" });
  const newer = protobufCodec({ proto: proto2("X = 1; Y = 2;"), type: "M" });
  const bytes = newer.encode({ e: 2, n: 3 });
  const seen = older.decode(bytes);
  assert.deepStrictEqual(seen, { e: 1, n: 3 }); // e unset: its default
  // The re-encoded message holds e = 1 (the default, now set) and then the unknown e = 2,
  // which wins as the later occurrence of the field.
  assert.deepStrictEqual(newer.decode(older.encode(seen)), { e: 2, n: 3 });
  // A closed enum still refuses an unlisted number on encode.
  assert.throws(() => older.encode({ e: 2 }), CodecError);
});

Deno.test("codec/protobuf: map keys are checked as values are: integer ranges, well-formed strings", () => {
  const codec = protobufCodec({
    proto: `syntax = "proto3";
      message M {
        map<int32, string> a = 1; map<uint32, string> b = 2;
        map<int64, string> c = 3; map<string, string> d = 4;
      }`,
    type: "M",
  });
  // Written as they are, these came back as other numbers (2147483648 as -2147483648).
  for (
    const value of [
      { a: { "2147483648": "x" } },
      { a: { "99999999999": "x" } },
      { b: { "-1": "x" } },
      { c: { "18446744073709551615": "x" } },
      { d: { "\ud800": "x" } },
    ]
  ) assert.throws(() => codec.encode(value), CodecError, JSON.stringify(value));
  const edges = {
    a: { "-2147483648": "lo", "2147483647": "hi" },
    b: { "4294967295": "hi" },
    c: { "-9223372036854775808": "lo" },
    d: { "é": "ok" },
  };
  assert.deepEqual(codec.decode(codec.encode(edges)), edges);
});
