import assert from "node:assert/strict";
import { Decoder, Encoder, ExtData as LibraryExtData } from "@msgpack/msgpack/dist.esm/index.mjs";
import fc from "fast-check";
import {
  type ExtensionDecoder,
  JS_UTF8_MAX_BYTES,
  KeyCache,
  MsgpackReader,
  type ReaderOptions,
} from "./_msgpack_reader.ts";

const OPTIONS: ReaderOptions = {
  maxDepth: 100,
  maxStrLength: 4_294_967_295,
  maxBinLength: 4_294_967_295,
  maxArrayLength: 4_294_967_295,
  maxMapLength: 4_294_967_295,
  maxExtLength: 4_294_967_295,
  lenientUtf8: false,
};

/** Extension type 0x66 is refused, so that an extension's error is part of the checks. */
const extension: ExtensionDecoder = (data, type) => {
  if (type === 0x66) throw new RangeError(`extension 0x66 refused (${data.length} bytes)`);
  return { type, data: [...data] };
};

const reader = (options: Partial<ReaderOptions> = {}): MsgpackReader =>
  new MsgpackReader({ ...OPTIONS, ...options }, extension);
const bytes = (...values: number[]): Uint8Array => new Uint8Array(values);
const libraryEncoder = new Encoder({
  extensionCodec: {
    tryToEncode: (o) => o instanceof LibraryExtData ? o : null,
    decode: () => null,
  },
});
const libraryDecoder = new Decoder({
  extensionCodec: { tryToEncode: () => null, decode: extension },
});
const encode = (value: unknown): Uint8Array => libraryEncoder.encode(value);

/** Values on which the library and conduit agree: safe integers, well-formed strings. */
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(null, true, false, NaN, Infinity, 2 ** 40, -(2 ** 40), 2 ** 53 - 1),
    fc.integer(),
    fc.integer({ min: -70_000, max: 70_000 }), // every width of int, near its edges
    fc.constantFrom(-(2 ** 31), 2 ** 31, 2 ** 32 - 1, -(2 ** 53) + 1, 2 ** 53 - 1, -(2 ** 33)),
    fc.double().filter((n) => !Object.is(n, -0)),
    fc.string({ unit: "grapheme", maxLength: 80 }),
    fc.string({ unit: "grapheme", minLength: 60, maxLength: 300 }),
    fc.uint8Array({ maxLength: 300 }),
    fc.constant(new LibraryExtData(0x30, new Uint8Array([1, 2, 3]))),
    tie("array"),
    tie("object"),
  ),
  array: fc.array(tie("value"), { maxLength: 20 }),
  object: fc.dictionary(
    fc.string({ unit: "grapheme", maxLength: 40 }).filter((k) => k !== "__proto__"),
    tie("value"),
    { maxKeys: 20 },
  ),
})).value;

Deno.test("msgpack reader: the library's values for well-formed input it encodes", () => {
  const ours = reader();
  fc.assert(
    fc.property(value, (v) => {
      const wire = encode(v);
      assert.deepStrictEqual(ours.read(wire), libraryDecoder.decode(wire));
    }),
    { numRuns: 1000 },
  );
});

Deno.test("msgpack reader: random and damaged bytes give a value or a RangeError/TypeError", () => {
  const ours = reader();
  const judge = (input: Uint8Array): void => {
    try {
      ours.read(input);
    } catch (err) {
      assert.ok(err instanceof RangeError || err instanceof TypeError, String(err));
    }
  };
  fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), judge), { numRuns: 2000 });
  fc.assert(
    fc.property(
      value.map(encode),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { maxLength: 4 }),
      fc.nat(),
      (wire, flips, cut) => {
        const damaged = wire.slice(0, wire.length - (cut % 3));
        for (const [at, mask] of flips) {
          if (damaged.length > 0) damaged[at % damaged.length] ^= mask;
        }
        judge(damaged);
      },
    ),
    { numRuns: 2000 },
  );
});

Deno.test("msgpack reader: strings are TextDecoder's verdict, fatal or replacing", () => {
  const strict = reader();
  const lenient = reader({ lenientUtf8: true });
  const fatal = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const replacing = new TextDecoder("utf-8", { ignoreBOM: true });
  const asString = (payload: Uint8Array): Uint8Array =>
    new Uint8Array([0xdb, 0, 0, payload.length >> 8, payload.length & 0xff, ...payload]);
  const check = (payload: Uint8Array): void => {
    const wire = asString(payload);
    let expected: string | undefined;
    try {
      expected = fatal.decode(payload);
    } catch {
      expected = undefined;
    }
    if (expected === undefined) {
      assert.throws(() => strict.read(wire), /Invalid UTF-8 in a string at byte/);
    } else {
      assert.equal(strict.read(wire), expected);
    }
    assert.equal(lenient.read(wire), replacing.decode(payload));
  };
  // Bytes near every boundary of the encoding, short (decoded here) and long (TextDecoder).
  const edgy = fc.constantFrom(
    0x00,
    0x7f,
    0x80,
    0xbf,
    0xc0,
    0xc1,
    0xc2,
    0xdf,
    0xe0,
    0xed,
    0xef,
    0xf0,
    0xf4,
    0xf5,
    0xff,
    0x9f,
    0xa0,
    0x8f,
    0x90,
  );
  fc.assert(fc.property(fc.uint8Array({ maxLength: 24 }), (b) => check(b)), { numRuns: 2000 });
  fc.assert(
    fc.property(fc.array(edgy, { maxLength: 24 }), (b) => check(new Uint8Array(b))),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(
      fc.string({ unit: "grapheme", minLength: 1, maxLength: 400 }),
      fc.nat(),
      (s, at) => {
        const good = new TextEncoder().encode(s);
        check(good);
        const bad = good.slice();
        bad[at % bad.length] ^= 0x40;
        check(bad);
      },
    ),
    { numRuns: 500 },
  );
  // Past the JavaScript decoder's length, an error still names the byte.
  const long = new Uint8Array(JS_UTF8_MAX_BYTES + 10).fill(0x61);
  long[JS_UTF8_MAX_BYTES + 5] = 0xff;
  assert.throws(() => strict.read(asString(long)), /at byte 210$/);
  // A map key goes through the key cache, checked the same way.
  assert.throws(() => strict.read(bytes(0x81, 0xa2, 0xc3, 0x28, 0x01)), /Invalid UTF-8/);
  assert.deepStrictEqual(lenient.read(bytes(0x81, 0xa2, 0xc3, 0x28, 0x01)), { "\ufffd(": 1 });
});

Deno.test("msgpack reader: integers outside the safe range are bigints, at every edge", () => {
  const ours = reader();
  const u64 = (n: bigint): Uint8Array => {
    const b = new Uint8Array(9);
    b[0] = 0xcf;
    new DataView(b.buffer).setBigUint64(1, n);
    return b;
  };
  const i64 = (n: bigint): Uint8Array => {
    const b = new Uint8Array(9);
    b[0] = 0xd3;
    new DataView(b.buffer).setBigInt64(1, n);
    return b;
  };
  const safe = BigInt(Number.MAX_SAFE_INTEGER);
  const cases: Array<[Uint8Array, unknown]> = [
    [u64(0n), 0],
    [u64(safe), Number.MAX_SAFE_INTEGER],
    [u64(safe + 1n), safe + 1n],
    [u64(2n ** 64n - 1n), 2n ** 64n - 1n],
    [u64(2n ** 32n + 5n), 2 ** 32 + 5],
    [i64(-safe), -Number.MAX_SAFE_INTEGER],
    [i64(-safe - 1n), -safe - 1n],
    [i64(safe + 1n), safe + 1n],
    [i64(-(2n ** 63n)), -(2n ** 63n)],
    [i64(2n ** 63n - 1n), 2n ** 63n - 1n],
    [i64(-(2n ** 32n) + 5n), -(2 ** 32) + 5],
    [i64(-1n), -1],
  ];
  for (const [wire, expected] of cases) assert.strictEqual(ours.read(wire), expected, `${wire}`);
  fc.assert(
    fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }), (n) => {
      const wire = n >= 2n ** 63n ? u64(n) : i64(n);
      const expected = n >= -safe && n <= safe ? Number(n) : n;
      assert.strictEqual(ours.read(wire), expected);
    }),
  );
});

Deno.test("msgpack reader: a map with a key that is no string is a Map in wire order", () => {
  const ours = reader();
  assert.deepStrictEqual(ours.read(bytes(0x81, 0x01, 0x02)), new Map([[1, 2]]));
  const mixed = ours.read(bytes(0x83, 0xa1, 0x62, 0x01, 0xa1, 0x31, 0x02, 0x03, 0x04));
  assert.ok(mixed instanceof Map);
  assert.deepStrictEqual([...mixed.entries()], [["b", 1], ["1", 2], [3, 4]]);
  const keys = ours.read(
    bytes(0x84, 0xc0, 0x01, 0xc3, 0x02, 0x91, 0x01, 0x03, 0xc4, 0x01, 0x07, 0x04),
  );
  assert.deepStrictEqual(
    [...(keys as Map<unknown, unknown>).entries()],
    [[null, 1], [true, 2], [[1], 3], [new Uint8Array([7]), 4]],
  );
  // A string-keyed map stays a plain object, "__proto__" as data.
  const proto = [0xa9, ...new TextEncoder().encode("__proto__")];
  const object = ours.read(bytes(0x81, ...proto, 0x01)) as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(object), Object.prototype);
  assert.deepStrictEqual(Object.getOwnPropertyDescriptor(object, "__proto__")?.value, 1);
  const inMap = ours.read(bytes(0x82, ...proto, 0x01, 0x02, 0x03)) as Map<unknown, unknown>;
  assert.deepStrictEqual([...inMap.entries()], [["__proto__", 1], [2, 3]]);
});

Deno.test("msgpack reader: limits, depth, truncation and trailing bytes are errors", () => {
  const limited = reader({ maxStrLength: 2, maxArrayLength: 2, maxMapLength: 1 });
  assert.throws(() => limited.read(encode("abc")), /maxStrLength \(2\)/);
  assert.throws(() => limited.read(encode({ abc: 1 })), /maxStrLength \(2\)/); // a cached key
  assert.throws(() => limited.read(encode([1, 2, 3])), /maxArrayLength \(2\)/);
  assert.throws(() => limited.read(encode({ a: 1, b: 2 })), /maxMapLength \(1\)/);
  assert.deepStrictEqual(limited.read(encode(["ab", [1]])), ["ab", [1]]);
  const nested = (depth: number): Uint8Array =>
    new Uint8Array(depth).fill(0x91).map((b, i) => i === depth - 1 ? 0x01 : b);
  const shallow = reader({ maxDepth: 5 });
  assert.deepStrictEqual(shallow.read(nested(5)), [[[[1]]]]);
  assert.throws(() => shallow.read(nested(6)), /maxDepth \(5\)/);
  assert.throws(() => reader().read(nested(100_000)), /maxDepth \(100\)/);
  assert.throws(() => reader().read(bytes(0xdd, 0xff, 0xff, 0xff, 0xff)), /ends inside a value/);
  assert.throws(() => reader().read(bytes()), /Input of 0 byte\(s\) ends inside a value/);
  assert.throws(() => reader().read(bytes(0x01, 0x02)), /1 byte\(s\) follow the value/);
  assert.throws(() => reader().read(bytes(0x91, 0xc1)), /0xc1 at byte 1/);
  assert.throws(() => reader().read(bytes(0xd4, 0x66, 0x00)), /extension 0x66 refused/);
});

Deno.test("msgpack reader: binary values are views of the input", () => {
  const input = new Uint8Array([0xff, 0xc4, 0x02, 0x07, 0x08]).subarray(1);
  const view = reader().read(input) as Uint8Array;
  assert.equal(view.buffer, input.buffer);
  assert.deepStrictEqual([...view], [7, 8]);
});

Deno.test("msgpack reader: maps turned into Maps nest in linear time, values intact", () => {
  // Each level: a map whose string-keyed entry holds the next level (every kind of value
  // beside it, for the skip) and whose last key is an int, so every level becomes a Map.
  const ours = reader({ maxDepth: 200 });
  const items = [
    null,
    true,
    1,
    -1,
    200,
    -200,
    1000,
    -100,
    70000,
    -70000,
    2 ** 40,
    -(2 ** 40),
    1.5,
    "s",
    "x".repeat(40),
    "y".repeat(300),
    new Uint8Array(3),
    new Uint8Array(300),
    new LibraryExtData(0x30, new Uint8Array(1)),
    new LibraryExtData(0x30, new Uint8Array(16)),
    new LibraryExtData(0x30, new Uint8Array(5)),
    new LibraryExtData(0x30, new Uint8Array(300)),
    { a: [1] },
    new Array(20).fill(0),
    Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i])),
  ].map(encode);
  // Forms the library never writes for these values: float 32 and 32-bit lengths.
  const raw = [
    [0xca, 0x3f, 0xc0, 0, 0],
    [0xdb, 0, 0, 0, 1, 0x61],
    [0xc6, 0, 0, 0, 1, 0x00],
    [0xc9, 0, 0, 0, 1, 0x30, 0x00],
    [0xdd, 0, 0, 0, 1, 0x01],
    [0xdf, 0, 0, 0, 1, 0xa1, 0x61, 0x01],
  ].map((b) => new Uint8Array(b));
  const all = [...items, ...raw];
  const kinds = new Uint8Array([0xdc, 0, all.length, ...all.flatMap((b) => [...b])]);
  let inner = encode(0);
  let expected: unknown = 0;
  for (let level = 0; level < 60; level++) {
    inner = new Uint8Array([0x83, 0xa1, 0x6e, ...inner, 0xa1, 0x6b, ...kinds, 0x07, 0x08]);
    expected = new Map<unknown, unknown>([["n", expected], ["k", libraryDecoder.decode(kinds)], [
      7,
      8,
    ]]);
  }
  assert.deepStrictEqual(ours.read(inner), expected);
});

Deno.test("msgpack reader: the key cache keeps every key of a 64-key record of one key length", () => {
  // Records of more keys of one length than the cache kept per length (16) evicted each
  // other's keys at every record, so each key's string was built anew: decoding such maps
  // cost several times more per byte than maps of mixed key lengths.
  for (const name of [(i: number) => `key_${String(i).padStart(6, "0")}`, (i: number) => `k${i}`]) {
    const cache = new KeyCache();
    const keys = Array.from({ length: 64 }, (_, i) => name(i)).filter((key) => key.length > 2);
    const bytes = keys.map((key) => new TextEncoder().encode(key));
    bytes.forEach((key, i) => cache.store(key, 0, key.length, keys[i]));
    const kept = keys.filter((key, i) => cache.find(bytes[i], 0, bytes[i].length) === key);
    assert.deepEqual(kept, keys);
  }
});
