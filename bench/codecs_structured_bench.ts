// The lossless worker codec: MessagePack (codecs/msgpack.ts, the baseline), V8's structured
// serialization (`node:v8` serialize/deserialize), the structured codec built on MessagePack
// (codecs/structured.ts), the same with a channel direction's shape tables (ShapeEncoder,
// once its shapes are defined: what every message after the first costs), and msgpackr with
// records (per message, and with structures shared by both ends, as a channel could keep
// them), on the same values: a small call, 1 KB and 1 MB of records with a Date and a Set
// each, and one 1 MiB Uint8Array. "plain" groups run the JSON-like records alone, so
// structured vs msgpack there is the cost of the structured codec's walk (the path check).
// Each candidate has a round trip, an encode and a decode case per payload.
//
//   deno bench -A --lock=bench/msgpackr.lock bench/codecs_structured_bench.ts
//
// (msgpackr is locked apart from deno.json's packages: see MSGPACKR in _codec_payloads.ts.)
//
// Before the cases, the encoded bytes of each payload (stderr) and a fidelity table say what
// each candidate sends and what it does with each kind of value: kept, changed (how) or
// refused.

import { isDeepStrictEqual } from "node:util";
import { msgpackCodec } from "../codecs/msgpack.ts";
import { structuredCodec } from "../codecs/structured.ts";
import type { Codec } from "../codecs/types.ts";
import {
  benchBatch,
  benchPayloads,
  loadMsgpackr,
  shapedStructuredCodec,
  v8Codec,
} from "./_codec_payloads.ts";

const msgpackrCodec = await loadMsgpackr();
const CANDIDATES: Array<[string, () => Codec<unknown>]> = [
  ["msgpack", () => msgpackCodec()],
  ["v8", v8Codec],
  ["structured", () => structuredCodec()],
  ["structured+shapes", shapedStructuredCodec],
  ["msgpackr records", () => msgpackrCodec(false)],
  ["msgpackr shared records", () => msgpackrCodec(true)],
];

/** JSON-like records plus what JSON loses: a Date and a Set in each. */
function structuredBatch(bytes: number): unknown {
  return {
    records: benchBatch(bytes).records.map((record, i) => ({
      ...record,
      seen: new Date(1_700_000_000_000 + i * 1000),
      tags: new Set(record.tags),
    })),
  };
}

const small = benchPayloads()[0].value;
const cases: Array<[string, unknown]> = [
  ["small", small],
  ["1KB", structuredBatch(1_000)],
  ["1MB", structuredBatch(1_000_000)],
  ["1MiB Uint8Array", { seq: 1, chunk: new Uint8Array(1 << 20).fill(0xa5) }],
  ["plain 1KB", benchBatch(1_000)],
  ["plain 1MB", benchBatch(1_000_000)],
];

const sizes: string[] = [];
for (const [name, value] of cases) {
  const row = [name];
  for (const [codecName, make] of CANDIDATES) {
    const codec = make();
    // msgpack turns a Set into a Set and a Date into a Date: every candidate carries these.
    // The first message defines the shapes (structures): the cases measure the ones after.
    codec.decode(codec.encode(value).slice());
    const bytes = codec.encode(value).slice();
    if (!isDeepStrictEqual(codec.decode(bytes), value)) {
      throw new Error(`${codecName} does not carry the ${name} payload`);
    }
    row.push(String(bytes.length));
    const bench = (kind: string, fn: () => void) =>
      Deno.bench({
        name: `codec/${codecName} ${name} ${kind}`,
        group: `${name} ${kind}`,
        baseline: codecName === "msgpack",
        fn,
      });
    bench("round trip", () => {
      codec.decode(codec.encode(value));
    });
    bench("encode", () => {
      codec.encode(value);
    });
    bench("decode", () => {
      codec.decode(bytes);
    });
  }
  sizes.push(row.join(" | "));
}
console.error(`bytes per message | ${CANDIDATES.map(([n]) => n).join(" | ")}`);
console.error(sizes.join("\n"));

// Fidelity, on stderr so that `deno bench --json` stays parseable.
class Point {
  x = 1;
}
class QuotaError extends Error {
  override name = "QuotaError";
  code = "E_QUOTA";
}
const KINDS: Array<[string, unknown]> = [
  ["undefined in an object", { a: undefined }],
  ["undefined in an array", [undefined]],
  ["-0", -0],
  ["Date", new Date(5)],
  ["invalid Date", new Date(NaN)],
  ["Map with object keys", new Map([[{ k: 1 }, 1]])],
  ["Set", new Set([1])],
  ["bigint 2^70", 2n ** 70n],
  ["Uint8Array", new Uint8Array([1])],
  ["Float64Array", new Float64Array([0.5])],
  ["BigInt64Array", new BigInt64Array([1n])],
  ["lone surrogate x60", "\uD800".repeat(60)],
  ["null-prototype object", Object.assign(Object.create(null), { a: 1 })],
  ["class instance", new Point()],
  ["custom error (name, code)", new QuotaError("over")],
  ["function in an object", { f: () => 1 }],
  ["symbol in an object", { s: Symbol("s") }],
];
const rows = KINDS.map(([kind, value]) => {
  const row: Record<string, string> = { kind };
  for (const [codecName, make] of CANDIDATES) row[codecName] = fidelity(make(), value);
  return row;
});
console.error("fidelity (kept / changed: what came back / refused):");
console.error(rows.map((r) => [r.kind, ...CANDIDATES.map(([n]) => r[n])].join(" | ")).join("\n"));

function fidelity(codec: Codec<unknown>, value: unknown): string {
  let decoded: unknown;
  try {
    decoded = codec.decode(codec.encode(value));
  } catch {
    return "refused";
  }
  if (value instanceof Error) {
    const e = decoded as { name?: string; code?: string };
    const kept = decoded instanceof Error && e.name === value.name &&
      e.code === (value as QuotaError).code;
    return kept ? "kept" : `changed: ${e.name}, code ${e.code}`;
  }
  if (
    isDeepStrictEqual(decoded, value) &&
    Object.getPrototypeOf(decoded) === Object.getPrototypeOf(value)
  ) {
    return "kept";
  }
  return `changed: ${Deno.inspect(decoded, { depth: 1 }).slice(0, 40).replace(/\s+/g, " ")}`;
}
