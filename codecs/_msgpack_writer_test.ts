import assert from "node:assert/strict";
import {
  Encoder,
  encodeTimestampExtension,
  ExtData as LibraryExtData,
} from "@msgpack/msgpack/dist.esm/index.mjs";
import fc from "fast-check";
import { encodeTimestamp, ExtData } from "./_msgpack_ext.ts";
import { type ExtensionHook, MsgpackWriter } from "./_msgpack_writer.ts";
import { cyclic } from "./_test_util.ts";

const MAX_DEPTH = 100;

/**
 * The codec's kinds of extension, with nested payloads encoded by `nested` and timestamps by
 * `timestamp`: conduit's own for the writer, the library's for the library, so their bytes are
 * compared too. Values hold conduit's ExtData, which both encode as an extension.
 */
function hook(
  nested: (items: unknown[]) => Uint8Array,
  timestamp: (date: Date) => Uint8Array,
): ExtensionHook {
  return (object) => {
    if (typeof object === "bigint") return new ExtData(0x42, utf8(object.toString()));
    if (object instanceof Date) return new ExtData(-1, timestamp(object));
    if (object instanceof Map) return new ExtData(1, nested([...object].flat()));
    if (object instanceof Set) return new ExtData(2, nested([...object]));
    if (object instanceof ExtData) return object;
    return null;
  };
}

const writerHook: ExtensionHook = hook(
  (items) => new MsgpackWriter(writerHook, MAX_DEPTH).encode(items).slice(),
  encodeTimestamp,
);
const libraryHook = hook(
  (items) => library().encode(items),
  (date) => encodeTimestampExtension(date)!,
);
const libraryExtension = (object: unknown): LibraryExtData | null => {
  const ext = libraryHook(object);
  return ext === null ? null : new LibraryExtData(ext.type, ext.data);
};
const library = (): Encoder =>
  new Encoder({
    extensionCodec: { tryToEncode: libraryExtension, decode: () => null },
    maxDepth: MAX_DEPTH,
  });

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

/** The writer's outcome and the library's, for comparison: bytes, or the error's message. */
function outcomes(writer: MsgpackWriter, encoder: Encoder, value: unknown): [unknown, unknown] {
  const attempt = (fn: () => Uint8Array): unknown => {
    try {
      return fn().slice();
    } catch (err) {
      return err instanceof Error ? `${err.constructor.name}: ${err.message}` : err;
    }
  };
  return [attempt(() => writer.encode(value)), attempt(() => encoder.encode(value))];
}

const BOUNDARIES = [
  0x7f,
  0x80,
  0xff,
  0x100,
  0xffff,
  0x10000,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32 - 1,
  2 ** 32,
  Number.MAX_SAFE_INTEGER,
  2 ** 53,
].flatMap((n) => [n, -n, n - 1, -n - 1, n + 1, -n + 1]);

/** Everything the codec hands the writer, edge cases included, in any nesting. */
function anyValue(): fc.Arbitrary<unknown> {
  const sized = (size: number): Uint8Array => new Uint8Array(size).map((_, i) => i);
  const leaf = fc.oneof(
    fc.constantFrom(null, undefined, true, false, -0, NaN, Infinity, -Infinity, ...BOUNDARIES),
    fc.integer(),
    fc.double(),
    // Well-formed (lone surrogates are the writer's own error, tested below), on both sides of
    // the 50 units where the library's string path changes.
    fc.string({ unit: "binary", maxLength: 80 }).filter((s) => s.isWellFormed()),
    fc.string({ unit: "grapheme-ascii", minLength: 20, maxLength: 300 }),
    fc.bigInt(),
    fc.date(),
    fc.uint8Array({ maxLength: 300 }),
    fc.int16Array({ maxLength: 8 }),
    fc.float64Array({ maxLength: 4 }),
    fc.uint8Array({ maxLength: 8 }).map((b) => new DataView(b.buffer)),
    fc.constantFrom(1, 2, 3, 4, 8, 16, 17, 255, 256).map((n) => new ExtData(0x30, sized(n))),
    fc.constant(Object.create(null)),
    fc.constant(Object.create(Array.prototype)),
    fc.constant(
      new (class Point {
        x = 1;
        y = 2;
      })(),
    ),
    fc.constant([1, , 3]), // a hole
  );
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: "small" }, leaf, tie("array"), tie("object"), tie("map")),
    array: fc.array(tie("value"), { maxLength: 20 }),
    object: fc.dictionary(
      fc.string({ unit: "binary", maxLength: 40 }).filter((s) => s.isWellFormed()),
      tie("value"),
      {
        maxKeys: 20,
      },
    ),
    map: fc.array(tie("value"), { maxLength: 4 }).map((items) =>
      new Map(items.map((v, i) => [i, v]))
    ),
  }));
  return value;
}

Deno.test("msgpack writer: the library's bytes for every kind of value", () => {
  const writer = new MsgpackWriter(writerHook, MAX_DEPTH);
  const encoder = library();
  fc.assert(
    fc.property(anyValue(), (value) => {
      const [ours, theirs] = outcomes(writer, encoder, value);
      assert.deepStrictEqual(ours, theirs);
    }),
    { numRuns: 400 },
  );
});

Deno.test("msgpack writer: the library's bytes and errors at the edges", () => {
  const writer = new MsgpackWriter(writerHook, MAX_DEPTH);
  const encoder = library();
  let deep: unknown = 0;
  for (let i = 1; i < MAX_DEPTH; i++) deep = [deep];
  const cases: unknown[] = [
    deep, // the deepest allowed
    [deep], // one level too deep
    cyclic(),
    () => 1,
    Symbol("s"),
    { f: () => 1 },
    new Array(70_000).fill(1), // array 32
    Array.from({ length: 20 }, (_, i) => i), // array 16
    Object.fromEntries(Array.from({ length: 70_000 }, (_, i) => [`k${i}`, i])), // map 32
    "x".repeat(70_000), // str 32
    "é".repeat(200), // str 16 through TextEncoder
    new Uint8Array(70_000), // bin 32
    new ExtData(0x30, new Uint8Array(70_000)), // ext 32
    new Map([["m", new Map([["n", new Set([1n, new Date(1)])]])]]),
  ];
  for (const value of cases) {
    const [ours, theirs] = outcomes(writer, encoder, value);
    assert.deepStrictEqual(ours, theirs);
  }
});

Deno.test("msgpack writer: a string with a lone surrogate is an error that names it", () => {
  const writer = new MsgpackWriter(writerHook, MAX_DEPTH);
  const cases: Array<[string, RegExp]> = [
    ["\ud800".repeat(20), /U\+D800\) at index 0/], // short: the library would write WTF-8
    ["a".repeat(60) + "\udc00", /U\+DC00\) at index 60/], // long: it would write U+FFFD
    ["é\ud83d", /U\+D83D\) at index 1/],
    ["\ud83d\ude00\ud83d", /U\+D83D\) at index 2/],
  ];
  for (const [value, message] of cases) {
    assert.throws(() => writer.encode({ k: value }), message);
    assert.throws(() => writer.encode({ [value]: 1 }), message);
  }
  assert.deepStrictEqual(
    writer.encode("\ud83d\ude00"),
    new Uint8Array([0xa4, 0xf0, 0x9f, 0x98, 0x80]),
  );
  fc.assert(
    fc.property(fc.string({ unit: "binary", maxLength: 80 }), (text) => {
      if (text.isWellFormed()) writer.encode(text);
      else assert.throws(() => writer.encode(text), /lone surrogate/);
    }),
  );
});

Deno.test("msgpack writer: re-entered from a getter, both encodings stay whole", () => {
  const writer = new MsgpackWriter(writerHook, MAX_DEPTH);
  const value = {
    a: "before",
    get inner(): number[] {
      return [...writer.encode(["nested", 1, 2])];
    },
    z: "after",
  };
  const bytes = writer.encode(value).slice();
  assert.deepStrictEqual(bytes, library().encode(value));
});

Deno.test("msgpack writer: a view is valid until the next encode; huge buffers are dropped", () => {
  const writer = new MsgpackWriter(writerHook, MAX_DEPTH);
  const small = writer.encode({ a: 1 });
  assert.deepStrictEqual(small, library().encode({ a: 1 }));
  const big = new Uint8Array(5 * 1024 * 1024).fill(7);
  const view = writer.encode(big);
  assert.equal(view.length, big.length + 5);
  const after = writer.encode({ b: 2 }); // a fresh, small buffer: the big view stays intact
  assert.notEqual(after.buffer, view.buffer);
  assert.ok(view.subarray(5).every((byte) => byte === 7));
  assert.deepStrictEqual(after, library().encode({ b: 2 }));
});
