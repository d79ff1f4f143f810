/**
 * Protobuf fidelity with `protoc` (Debian's protobuf-compiler), both ways: messages protoc
 * encodes from text format are read here and compared exactly, the same values encoded here
 * decode in protoc to the same text, and a message from a newer schema passes through an
 * older one (unknown fields, enum numbers the older schema does not list) without loss.
 */

import assert from "node:assert/strict";
import { protobufCodec } from "../codecs/protobuf.ts";

const PROTO_DIR = new URL("./codecs/", import.meta.url).pathname;
const PROTO_FILE = "table.proto";
const NEWER = await Deno.readTextFile(`${PROTO_DIR}${PROTO_FILE}`);
/** Msg as an older peer knows it: fields 1-6, Inner without `added`, Kind without B and C. */
const OLDER = `syntax = "proto3"; package table;
enum Kind { KIND_UNSPECIFIED = 0; A = 1; }
message Inner { string name = 1; }
message Msg { int64 id = 1; Inner inner = 2; repeated Inner list = 3;
  map<string, Inner> by_name = 4; Kind kind = 5; repeated Kind kinds = 6; }`;

const protocMissing = await (async () => {
  try {
    const { success } = await new Deno.Command("protoc", { args: ["--version"], stdout: "null" })
      .output();
    if (success) return undefined;
  } catch {
    // not found: the message below
  }
  const why = "protoc cannot be run (apt-get install protobuf-compiler)";
  console.warn(`interop/protobuf: skipping: ${why}`);
  return why;
})();

/** Runs protoc --encode or --decode on one message type, stdin to stdout. */
async function protoc(
  mode: "encode" | "decode",
  type: string,
  input: Uint8Array,
): Promise<Uint8Array> {
  const child = new Deno.Command("protoc", {
    args: [`--proto_path=${PROTO_DIR}`, `--${mode}=table.${type}`, PROTO_FILE],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(input);
  await writer.close();
  const { success, stdout, stderr } = await child.output();
  assert.ok(success, `protoc --${mode}: ${new TextDecoder().decode(stderr)}`);
  return stdout;
}

const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const decodeText = async (type: string, bytes: Uint8Array): Promise<string> =>
  new TextDecoder().decode(await protoc("decode", type, bytes));

const SCALAR_DEFAULTS = {
  i32: 0,
  i64: 0n,
  u32: 0,
  u64: 0n,
  s32: 0,
  s64: 0n,
  f32: 0,
  f64: 0n,
  sf32: 0,
  sf64: 0n,
  fl: 0,
  db: 0,
  b: false,
  s: "",
  by: new Uint8Array(0),
  kind: 0,
  many: [],
  m: {},
};

/** Text-format messages and the plain objects conduit must read from protoc's bytes. */
const SCALARS: Array<[string, string, Record<string, unknown>]> = [
  ["int32 min", "i32: -2147483648", { i32: -2147483648 }],
  ["int32 max", "i32: 2147483647", { i32: 2147483647 }],
  ["int64 min", "i64: -9223372036854775808", { i64: -(2n ** 63n) }],
  ["int64 max", "i64: 9223372036854775807", { i64: 2n ** 63n - 1n }],
  ["int64 2^53+1", "i64: 9007199254740993", { i64: 2n ** 53n + 1n }],
  ["uint32 max", "u32: 4294967295", { u32: 4294967295 }],
  ["uint64 max", "u64: 18446744073709551615", { u64: 2n ** 64n - 1n }],
  ["sint32 min", "s32: -2147483648", { s32: -2147483648 }],
  ["sint64 min", "s64: -9223372036854775808", { s64: -(2n ** 63n) }],
  ["sint64 max", "s64: 9223372036854775807", { s64: 2n ** 63n - 1n }],
  ["fixed32 max", "f32: 4294967295", { f32: 4294967295 }],
  ["fixed64 max", "f64: 18446744073709551615", { f64: 2n ** 64n - 1n }],
  ["sfixed32 min", "sf32: -2147483648", { sf32: -2147483648 }],
  ["sfixed64 min", "sf64: -9223372036854775808", { sf64: -(2n ** 63n) }],
  ["float 1.5", "fl: 1.5", { fl: 1.5 }],
  ["float max", "fl: 3.4028234663852886e+38", { fl: 3.4028234663852886e+38 }],
  ["double tiny", "db: 5e-324", { db: 5e-324 }],
  ["double inf", "db: -inf", { db: -Infinity }],
  ["double nan", "db: nan", { db: NaN }],
  ["bool", "b: true", { b: true }],
  ["string", 's: "h\\303\\251llo \\360\\235\\204\\236"', { s: "héllo 𝄞" }],
  ["bytes", 'by: "\\000\\377"', { by: new Uint8Array([0, 255]) }],
  ["enum listed", "kind: B", { kind: 2 }],
  ["enum unlisted", "kind: 7", { kind: 7 }],
  ["repeated int64", "many: [-1, 9223372036854775807, 0]", { many: [-1n, 2n ** 63n - 1n, 0n] }],
  ["map int32 keys", 'm { key: 1 value: "a" } m { key: -1 value: "b" }', {
    m: { 1: "a", "-1": "b" },
  }],
];

Deno.test({
  name:
    "interop/protobuf: protoc's bytes read exactly; conduit's decode in protoc to the same text",
  ignore: protocMissing !== undefined,
  async fn() {
    const codec = protobufCodec({ proto: NEWER, type: "table.Scalars", keepCase: true });
    let identical = 0;
    for (const [name, source, fields] of SCALARS) {
      const expected = { ...SCALAR_DEFAULTS, ...fields };
      const bytes = await protoc("encode", "Scalars", text(source));
      assert.deepStrictEqual(
        codec.decode(bytes),
        expected,
        `${name}: conduit reads protoc's bytes`,
      );
      const ours = codec.encode(expected as never);
      assert.equal(
        await decodeText("Scalars", ours),
        await decodeText("Scalars", bytes),
        `${name}: protoc reads conduit's bytes`,
      );
      if (ours.length === bytes.length && ours.every((b, i) => b === bytes[i])) identical++;
    }
    console.log(`interop/protobuf: ${SCALARS.length} cases both ways, ${identical} byte-identical`);
  },
});

const NEWER_MSG = `id: 1152921504606846976
inner { name: "i" added: -5 }
list { name: "l0" added: 1 }
list { name: "l1" }
by_name { key: "k" value { name: "m" added: 7 } }
kind: C
kinds: [A, B, C, 9]
note: "from a newer schema"
extra { s: "x" }
nums: [1, 2, 4294967295]
d: 0.5
`;

Deno.test({
  name: "interop/protobuf: a newer message passes through an older schema without loss",
  ignore: protocMissing !== undefined,
  async fn() {
    const original = await protoc("encode", "Msg", text(NEWER_MSG));
    for (const verify of [true, false]) {
      const older = protobufCodec({ proto: OLDER, type: "table.Msg", keepCase: true, verify });
      const seen = older.decode(original) as Record<string, unknown>;
      // The older schema sees its own fields, and enum numbers it does not list as numbers.
      assert.deepStrictEqual(seen, {
        id: 2n ** 60n,
        inner: { name: "i" },
        list: [{ name: "l0" }, { name: "l1" }],
        by_name: { k: { name: "m" } },
        kind: 3,
        kinds: [1, 2, 3, 9],
      });
      const passed = older.encode(seen as never);
      assert.equal(
        await decodeText("Msg", passed),
        await decodeText("Msg", original),
        `verify ${verify}: protoc sees every field of the newer schema again`,
      );
    }
  },
});
