/**
 * Deterministic JSON-like payloads for the codec benchmarks, the Protobuf schema that
 * describes the same data, and the codecs compared. Every codec encodes the very same objects.
 *
 * @module
 */

import { deserialize, serialize } from "node:v8";
import { jsonCodec } from "../codecs/json.ts";
import { msgpackCodec } from "../codecs/msgpack.ts";
import { protobufCodec } from "../codecs/protobuf.ts";
import { ShapeDecoder, ShapeEncoder } from "../codecs/structured.ts";
import { structuredCodec } from "../codecs/structured.ts";
import type { Codec } from "../codecs/types.ts";

/** The Protobuf schema of `BenchCall` and `BenchBatch`. */
const BENCH_PROTO = new URL("./bench.proto", import.meta.url);

/** One record: a little of everything JSON-like data holds. */
export interface BenchRecord {
  id: number;
  name: string;
  email: string;
  active: boolean;
  score: number;
  tags: string[];
  location: { lat: number; lon: number; city: string };
}

/** A small RPC-like message. */
export interface BenchCall {
  id: number;
  method: string;
  params: { userId: number; fields: string[] };
  deadline: number;
}

/** Many records. */
export interface BenchBatch {
  records: BenchRecord[];
}

/** A named payload and the Protobuf message type that holds it. */
export interface BenchPayload {
  /** `small`, `1KB`, `10KB`, `100KB` or `1MB`. */
  name: string;
  value: BenchCall | BenchBatch;
  protoType: "bench.Call" | "bench.Batch";
}

const FIRST = ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia"];
const LAST = ["Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson"];
const CITIES = ["London", "Zürich", "São Paulo", "Kraków", "Tokyo", "Montréal", "Nairobi"];
const TAGS = ["admin", "beta", "ops", "staff", "trial", "eu", "us", "apac", "vip", "legacy"];

/** Builds the record with this index; the same index always gives the same record. */
export function benchRecord(index: number): BenchRecord {
  let seed = (index + 1) * 0x9e3779b1;
  const next = (): number => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)];
  const first = pick(FIRST);
  const last = pick(LAST);
  return {
    id: index + 1,
    name: `${first} ${last}`,
    email: `${first.toLowerCase()}.${last.toLowerCase()}${index}@example.com`,
    active: next() < 0.7,
    score: Math.round(next() * 1e6) / 100,
    tags: Array.from({ length: 1 + Math.floor(next() * 3) }, () => pick(TAGS)),
    location: {
      lat: Math.round((next() * 180 - 90) * 1e5) / 1e5,
      lon: Math.round((next() * 360 - 180) * 1e5) / 1e5,
      city: pick(CITIES),
    },
  };
}

const utf8 = new TextEncoder();

/** A batch of records whose compact JSON is as close to `bytes` as whole records allow. */
export function benchBatch(bytes: number): BenchBatch {
  const records: BenchRecord[] = [];
  let size = utf8.encode('{"records":[]}').length;
  while (true) {
    const record = benchRecord(records.length);
    const grown = size + utf8.encode(JSON.stringify(record)).length + (records.length ? 1 : 0);
    if (records.length > 0 && Math.abs(grown - bytes) > Math.abs(size - bytes)) break;
    records.push(record);
    size = grown;
  }
  return { records };
}

/** The five benchmark payloads, smallest first. */
export function benchPayloads(): BenchPayload[] {
  const small: BenchCall = {
    id: 42,
    method: "users.get",
    params: { userId: 1234567, fields: ["name", "email"] },
    deadline: 1_700_000_000_123,
  };
  return [
    { name: "small", value: small, protoType: "bench.Call" },
    ...(["1KB", "10KB", "100KB", "1MB"] as const).map((name, i): BenchPayload => ({
      name,
      value: benchBatch(1000 * 10 ** i),
      protoType: "bench.Batch",
    })),
  ];
}

/** The codecs compared on one payload, JSON (the baseline) first. */
export function benchCodecs(payload: BenchPayload): Array<[string, Codec<unknown>]> {
  const proto = { proto: Deno.readTextFileSync(BENCH_PROTO), type: payload.protoType };
  return [
    ["json", jsonCodec()],
    ["msgpack", msgpackCodec()],
    ["protobuf", protobufCodec(proto)],
    ["protobuf-noverify", protobufCodec({ ...proto, verify: false })],
  ];
}

/** V8's structured serialization (`node:v8`) as a codec, for the comparison only. */
export function v8Codec(): Codec<unknown> {
  return {
    name: "v8",
    encode: (value) => serialize(value),
    decode: (bytes) => deserialize(bytes),
  };
}

/**
 * The structured codec over one direction's shape tables, both ends in one: each encode's new
 * shapes are defined at the decoding end at once, as the SHAPE frames before its body are.
 * After the first message of a payload, what every later message of it costs.
 */
export function shapedStructuredCodec(): Codec<unknown> {
  const codec = structuredCodec();
  const sending = new ShapeEncoder();
  const receiving = new ShapeDecoder();
  return {
    name: "structured+shapes",
    encode(value) {
      // A copy, as `encode` promises (the channel copies the view into its write batch).
      const bytes = codec.encodeShaped(value, sending).slice();
      for (const shape of sending.uncommitted()) {
        if (sending.commit(shape)) receiving.define(shape.id, shape.keys);
      }
      return bytes;
    },
    decode: (bytes) => codec.decodeShaped(bytes, receiving),
  };
}

/**
 * msgpackr, a benchmark's comparison only: not in deno.json (its optional native part has a
 * build script, which every first `deno task` would warn about), so a program that loads it
 * runs with its own lock, `--lock=bench/msgpackr.lock` (the report's codec runs do).
 */
export const MSGPACKR = "npm:msgpackr@2.1.4";
/** The flag a program that loads {@linkcode MSGPACKR} runs with. */
export const MSGPACKR_LOCK_FLAG = `--lock=${new URL("./msgpackr.lock", import.meta.url).pathname}`;

/** The part of msgpackr's `Packr` the comparison uses. */
interface PackrClass {
  new (options: { structuredClone: boolean; structures?: unknown[] }): {
    pack(value: unknown): Uint8Array;
    unpack(bytes: Uint8Array): unknown;
  };
}

/**
 * Loads msgpackr and returns its codec with records: `structuredClone` carries Sets, Maps and
 * Dates; `shared` keeps the record structures between messages at both ends (one instance
 * encodes and decodes), as a channel could, instead of defining them in each message.
 */
export async function loadMsgpackr(): Promise<(shared: boolean) => Codec<unknown>> {
  // A specifier in a variable: deno check does not resolve it (nor add it to deno.lock).
  const { Packr } = await import(MSGPACKR) as { Packr: PackrClass };
  return (shared) => {
    const packr = new Packr(
      shared ? { structuredClone: true, structures: [] } : { structuredClone: true },
    );
    return {
      name: shared ? "msgpackr shared records" : "msgpackr records",
      encode: (value) => packr.pack(value),
      decode: (bytes) => packr.unpack(bytes),
    };
  };
}
