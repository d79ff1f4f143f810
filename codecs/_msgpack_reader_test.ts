import assert from "node:assert/strict";
import { CachedKeyDecoder } from "@msgpack/msgpack/dist.esm/CachedKeyDecoder.mjs";
import { Decoder, Encoder, ExtData } from "@msgpack/msgpack/dist.esm/index.mjs";
import fc from "fast-check";
import {
  type ExtensionDecoder,
  FALLBACK,
  MAX_FAST_DEPTH,
  MsgpackReader,
  type ReaderLimits,
} from "./_msgpack_reader.ts";

const NO_LIMITS: ReaderLimits = {
  maxStrLength: 4_294_967_295,
  maxBinLength: 4_294_967_295,
  maxArrayLength: 4_294_967_295,
  maxMapLength: 4_294_967_295,
  maxExtLength: 4_294_967_295,
};

/** Extension type 0x66 is refused, so that an extension's error is part of the comparison. */
const extension: ExtensionDecoder = (data, type) => {
  if (type === 0x66) throw new RangeError(`extension 0x66 refused (${data.length} bytes)`);
  return { type, data: [...data] };
};

function pair(limits: ReaderLimits = NO_LIMITS): [MsgpackReader, Decoder] {
  const keys = new CachedKeyDecoder();
  return [
    new MsgpackReader(limits, extension, keys),
    new Decoder({ ...limits, extensionCodec: { tryToEncode: () => null, decode: extension } }),
  ];
}

/**
 * Whatever the reader says must be the library's word: the same value, or the same error.
 * Returns whether the reader decided (did not fall back).
 */
function agree(reader: MsgpackReader, decoder: Decoder, bytes: Uint8Array): boolean {
  let ours: unknown;
  try {
    ours = reader.read(bytes);
  } catch (err) {
    assert.throws(() => decoder.decode(bytes), { message: (err as Error).message });
    return true;
  }
  if (ours === FALLBACK) return false;
  assert.deepStrictEqual(ours, decoder.decode(bytes));
  return true;
}

const library = new Encoder({
  extensionCodec: { tryToEncode: (o) => o instanceof ExtData ? o : null, decode: () => null },
});
const encode = (value: unknown): Uint8Array => library.encode(value);

const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(null, true, false, -0, NaN, Infinity, 2 ** 40, -(2 ** 40), 2 ** 53 - 1),
    fc.integer(),
    fc.integer({ min: -70_000, max: 70_000 }), // every width of int, near its edges
    fc.constantFrom(-(2 ** 31), 2 ** 31, 2 ** 32 - 1, -(2 ** 53) + 1, 2 ** 53 - 1, -(2 ** 33)),
    fc.double(),
    fc.string({ unit: "binary", maxLength: 80 }),
    fc.string({ unit: "grapheme", minLength: 60, maxLength: 300 }),
    fc.uint8Array({ maxLength: 300 }),
    fc.constantFrom(0x30, 0x66).map((type) => new ExtData(type, new Uint8Array([1, 2, 3]))),
    tie("array"),
    tie("object"),
  ),
  array: fc.array(tie("value"), { maxLength: 20 }),
  object: fc.dictionary(
    fc.string({ unit: "binary", maxLength: 40 }).filter((k) => k !== "__proto__"),
    tie("value"),
    { maxKeys: 20 },
  ),
})).value;

Deno.test("msgpack reader: the library's values for everything the library encodes", () => {
  const [reader, decoder] = pair();
  fc.assert(
    fc.property(value, (v) => {
      assert.ok(agree(reader, decoder, encode(v)), "fell back on well-formed input");
    }),
    { numRuns: 1000 },
  );
});

Deno.test("msgpack reader: random and damaged bytes: the library's word or a fallback", () => {
  const [reader, decoder] = pair();
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      agree(reader, decoder, bytes);
    }),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(
      value.map(encode),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { maxLength: 4 }),
      fc.nat(),
      (bytes, flips, cut) => {
        const damaged = bytes.slice(0, bytes.length - (cut % 3));
        for (const [at, mask] of flips) {
          if (damaged.length > 0) damaged[at % damaged.length] ^= mask;
        }
        agree(reader, decoder, damaged);
      },
    ),
    { numRuns: 2000 },
  );
});

Deno.test("msgpack reader: strings come out as the library makes them, invalid UTF-8 too", () => {
  const [reader, decoder] = pair();
  const cases = [
    [0xa3, 0x61, 0xff, 0x62], // invalid byte
    [0xa3, 0xed, 0xa0, 0x80], // an encoded surrogate
    [0xa2, 0xc0, 0xaf], // overlong
    [0xa2, 0xe2, 0x82], // cut inside a character
    [0x81, 0xa2, 0xc3, 0x28, 0x01], // invalid key
    [0xd9, 0x41, ...new Array(64).fill(0x61), 0xe9], // past the ASCII fast path
  ].map((b) => new Uint8Array(b));
  for (const bytes of cases) assert.ok(agree(reader, decoder, bytes), `${bytes}`);
});

Deno.test("msgpack reader: falls back for __proto__ keys, odd keys, limits and deep input", () => {
  const proto = [0xa9, ...new TextEncoder().encode("__proto__")];
  const limits = { ...NO_LIMITS, maxStrLength: 2, maxArrayLength: 2 };
  const [limited] = pair(limits);
  const [reader] = pair();
  assert.equal(reader.read(new Uint8Array([0x81, ...proto, 0x01])), FALLBACK);
  assert.equal(
    reader.read(new Uint8Array([0x81, 0xda, 0x00, 0x09, ...proto.slice(1), 0x01])),
    FALLBACK,
  );
  assert.equal(reader.read(new Uint8Array([0x81, 0x90, 0x01])), FALLBACK); // array key
  assert.equal(reader.read(new Uint8Array([0x81, 0xc0, 0x01])), FALLBACK); // nil key
  assert.deepStrictEqual(reader.read(new Uint8Array([0x81, 0x01, 0x02])), { 1: 2 }); // number key
  assert.equal(limited.read(encode("abc")), FALLBACK);
  assert.equal(limited.read(encode({ abc: 1 })), FALLBACK); // a cached key obeys it too
  assert.equal(limited.read(encode([1, 2, 3])), FALLBACK);
  assert.deepStrictEqual(limited.read(encode(["ab", [1]])), ["ab", [1]]);
  const nested = (depth: number): Uint8Array =>
    new Uint8Array(depth).fill(0x91).map((b, i) => i === depth - 1 ? 0x90 : b);
  assert.notEqual(reader.read(nested(MAX_FAST_DEPTH)), FALLBACK);
  assert.equal(reader.read(nested(MAX_FAST_DEPTH + 1)), FALLBACK);
  assert.equal(reader.read(nested(100_000)), FALLBACK); // no stack overflow
  assert.equal(reader.read(new Uint8Array([0xdd, 0xff, 0xff, 0xff, 0xff])), FALLBACK);
  assert.equal(reader.read(new Uint8Array(0)), FALLBACK);
  assert.equal(reader.read(new Uint8Array([0x01, 0x02])), FALLBACK); // two values
});

Deno.test("msgpack reader: binary values are views of the input", () => {
  const [reader] = pair();
  const input = new Uint8Array([0xff, 0xc4, 0x02, 0x07, 0x08]).subarray(1);
  const bytes = reader.read(input) as Uint8Array;
  assert.equal(bytes.buffer, input.buffer);
  assert.deepStrictEqual([...bytes], [7, 8]);
});
