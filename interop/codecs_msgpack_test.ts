/**
 * MessagePack fidelity with Python's `msgpack` package, both ways, on the table in
 * interop/_msgpack_table.ts: values Python packs are read here and compared exactly (or must
 * be refused with a CodecError that names them), and values conduit packs are unpacked and
 * compared in Python, through conduit_msgpack (the Python peer's extension hooks).
 */

import assert from "node:assert/strict";
import { CodecError } from "../errors.ts";
import { msgpackCodec } from "../codecs/msgpack.ts";
import { FROM_PYTHON, Refused, TO_PYTHON } from "./_msgpack_table.ts";
import { python, pythonMissing } from "./_python.ts";

const SCRIPT = new URL("./codecs/msgpack_table.py", import.meta.url).pathname;
const missing = await pythonMissing("msgpack");

Deno.test({
  name: "interop/msgpack: every value Python's msgpack writes reads back exactly or is refused",
  ignore: missing !== undefined,
  async fn() {
    const written = JSON.parse(await python(SCRIPT, "write")) as Record<string, string>;
    assert.deepStrictEqual(Object.keys(written).sort(), Object.keys(FROM_PYTHON).sort());
    const codec = msgpackCodec();
    const problems: string[] = [];
    let exact = 0;
    let refused = 0;
    for (const [name, expected] of Object.entries(FROM_PYTHON)) {
      const bytes = fromHex(written[name]);
      try {
        const value = codec.decode(bytes);
        if (expected instanceof Refused) {
          problems.push(`${name}: should be refused, decoded ${String(value)}`);
          continue;
        }
        assert.deepStrictEqual(value, expected, name);
        exact++;
      } catch (err) {
        if (expected instanceof Refused && err instanceof CodecError) {
          if (expected.message.test(err.message)) refused++;
          else problems.push(`${name}: refused with "${err.message}"`);
        } else {
          problems.push(`${name}: ${err instanceof Error ? err.message : err}`);
        }
      }
    }
    console.log(
      `interop/msgpack: ${exact} of ${exact + refused} Python values read exactly, ` +
        `${refused} refused with a CodecError naming the problem`,
    );
    assert.deepStrictEqual(problems, []);
  },
});

Deno.test({
  name: "interop/msgpack: Python reads every value conduit writes as dict/set/int/datetime",
  ignore: missing !== undefined,
  async fn() {
    const plain = msgpackCodec();
    const ints = msgpackCodec({ bigint: "int" });
    const table: Record<string, string> = {};
    for (const [name, { value, bigintAsInt }] of Object.entries(TO_PYTHON)) {
      table[name] = toHex((bigintAsInt ? ints : plain).encode(value));
    }
    const dir = await Deno.makeTempDir({ prefix: "conduit_msgpack_" });
    try {
      await Deno.writeTextFile(`${dir}/table.json`, JSON.stringify(table));
      assert.equal((await python(SCRIPT, "check", `${dir}/table.json`)).trim(), "ok");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

function fromHex(hex: string): Uint8Array {
  return new Uint8Array(hex.match(/../g)?.map((byte) => parseInt(byte, 16)) ?? []);
}

function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
