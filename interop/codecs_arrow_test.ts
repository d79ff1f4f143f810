/**
 * Arrow fidelity with pyarrow, both ways, on the table in interop/codecs/arrow_table.py:
 * every stream pyarrow writes (every type apache-arrow represents, dictionary deltas, LZ4 and
 * Zstandard bodies) is read here, or refused with a CodecError naming the type apache-arrow
 * cannot represent; each table read is written back plain, with LZ4 and with Zstandard, and
 * pyarrow checks that each is the table it wrote.
 */

import assert from "node:assert/strict";
import { CodecError } from "../errors.ts";
import { arrowCodec } from "../codecs/arrow.ts";
import { python, pythonMissing } from "./_python.ts";

const SCRIPT = new URL("./codecs/arrow_table.py", import.meta.url).pathname;
const missing = await pythonMissing("pyarrow");

Deno.test({
  name:
    "interop/arrow: every pyarrow stream reads, or is refused naming its type; pyarrow reads it back",
  ignore: missing !== undefined,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "conduit_arrow_" });
    try {
      const cases = JSON.parse(await python(SCRIPT, "write", dir)) as Record<string, string | null>;
      const codec = arrowCodec();
      const writers = {
        plain: codec,
        lz4: arrowCodec({ compression: "lz4" }),
        zstd: arrowCodec({ compression: "zstd" }),
      };
      let read = 0;
      let refused = 0;
      const problems: string[] = [];
      for (const [name, refusedType] of Object.entries(cases)) {
        const file = name.replaceAll(" ", "_");
        const bytes = await Deno.readFile(`${dir}/${file}.arrows`);
        let table;
        try {
          table = codec.decode(bytes);
        } catch (err) {
          const named = refusedType !== null && err instanceof CodecError &&
            err.message.includes(`is of type ${refusedType}`);
          if (named) refused++;
          else problems.push(`${name}: ${err instanceof Error ? err.message : err}`);
          continue;
        }
        if (refusedType !== null) {
          problems.push(`${name}: should be refused as ${refusedType}, read ${table.numRows} rows`);
          continue;
        }
        read++;
        for (const [variant, writer] of Object.entries(writers)) {
          await Deno.writeFile(`${dir}/${file}.${variant}.conduit.arrows`, writer.encode(table));
        }
      }
      console.log(
        `interop/arrow: ${read} of ${read + refused} pyarrow streams read (each written back ` +
          `plain, lz4 and zstd for pyarrow to check), ${refused} refused naming their type`,
      );
      assert.deepStrictEqual(problems, []);
      assert.equal((await python(SCRIPT, "check", dir)).trim(), `ok ${read * 3}`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
