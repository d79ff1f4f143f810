// Codecs on the same JSON-like data: small (~100 B), 1KB, 10KB, 100KB, 1MB. JSON is the
// baseline of every group; Protobuf uses the equivalent schema in _codec_payloads.ts, with its
// pre-encode verification on (the default) and off. Arrow is in codecs_arrow_bench.ts.
//
//   deno bench -A bench/codecs_bench.ts
//
// Cases: "round trip" is decode(encode(value)); "encode" and "decode" time one side, decode
// from bytes encoded up front; "encode view" (codecs with `encodeView`, which the channel
// uses) encodes into the codec's scratch memory instead of bytes of the caller's own. The
// sizes printed at load (stderr) are what each codec produced.

import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { benchCodecs, benchPayloads } from "./_codec_payloads.ts";

const sizes: Record<string, Record<string, number>> = {};
for (const payload of benchPayloads()) {
  const { name, value } = payload;
  sizes[name] = {};
  for (const [codecName, codec] of benchCodecs(payload)) {
    const bytes = codec.encode(value);
    sizes[name][codecName] = bytes.length;
    // Every codec must carry the whole payload, or the comparison means nothing.
    assert.deepStrictEqual(codec.decode(bytes), value, `${codecName} ${name}`);
    const baseline = codecName === "json";
    Deno.bench({
      name: `codec/${codecName} ${name} round trip`,
      group: `${name} round trip`,
      baseline,
      fn: () => {
        codec.decode(codec.encode(value));
      },
    });
    Deno.bench({
      name: `codec/${codecName} ${name} encode`,
      group: `${name} encode`,
      baseline,
      fn: () => {
        codec.encode(value);
      },
    });
    const encodeView = codec.encodeView?.bind(codec);
    if (encodeView !== undefined) {
      Deno.bench({
        name: `codec/${codecName} ${name} encode view`,
        group: `${name} encode`,
        fn: () => {
          encodeView(value);
        },
      });
    }
    Deno.bench({
      name: `codec/${codecName} ${name} decode`,
      group: `${name} decode`,
      baseline,
      fn: () => {
        codec.decode(bytes);
      },
    });
  }
}
// What the JSON codec's check for values JSON would change costs: the same codec unchecked.
const lossyJson = jsonCodec({ lossy: true });
for (const { name, value } of benchPayloads()) {
  Deno.bench({
    name: `codec/json lossy ${name} encode`,
    group: `${name} encode`,
    fn: () => {
      lossyJson.encode(value);
    },
  });
}

// On stderr, so that `deno bench --json` output stays parseable.
console.error("encoded sizes (bytes):", sizes);
