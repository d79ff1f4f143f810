/**
 * The codec conformance suite: one set of `Deno.test` cases run against every codec.
 *
 * Call {@linkcode codecConformance} from a codec's `*_test.ts` with a
 * {@linkcode CodecConformanceSpec} that declares which value shapes the codec can represent.
 * Every case is named `codec/<label>: <shape>` (label defaults to the codec's `name`). A shape
 * the spec leaves out is still registered, with `ignore: true` and the suffix
 * `(not declared)`, so a test report shows what a codec does not cover.
 *
 * The cases:
 *
 * | case | needs | asserts |
 * | --- | --- | --- |
 * | `name` | – | `name` is a non-empty token without spaces |
 * | `round trip` | `samples` | each sample survives `decode(encode(v))` (checked with `equal`); the encoded bytes are a `Uint8Array` the caller owns (later encodes do not change them); `decode` leaves its input unchanged and honours a non-zero `byteOffset` |
 * | `encode view` | the codec has `encodeView` | for every sample, `encodeView` gives `encode`'s bytes whatever call came before; a view is only read before the next call (the suite copies it to keep it, as users must, since the next call may overwrite it); bytes from `encode` never change through a later `encodeView` (no aliasing of its scratch); values encode rejects, `encodeView` rejects with `CodecError` too, and the codec works normally afterwards. With `arbitrary`, every generated value's view equals its encoding; with `large`, so does the 16 MiB value's |
 * | `empty values` | `empty` | each empty value round trips |
 * | `nesting` | `nested` | with `maxDepth`: `nested(maxDepth)` round trips and `nested(maxDepth + 1)` is a `CodecError` on encode (or, if encode accepts it, on decode). Without `maxDepth`: `nested(64)` round trips. Either way `nested(100_000)` gives a value or a `CodecError`, never a stack overflow |
 * | `unicode` | `unicode` | BMP, astral plane, combining marks, NUL, BOM round trip; lone surrogates round trip exactly when `loneSurrogates` is true, else encode/decode give a value or a `CodecError` |
 * | `binary` | `binary` | empty, all 256 byte values and 64 KiB of noise round trip |
 * | `16 MiB value` | `large` | `large()` round trips |
 * | `property round trip` | `arbitrary` | fast-check values round trip |
 * | `unencodable values` | `unencodable` | each encode throws `CodecError` (operation `"encode"`) |
 * | `undecodable bytes` | `undecodable` | each decode throws `CodecError` (operation `"decode"`) |
 * | `random garbage` | `garbage` (default on) | random byte strings, and encoded samples with flipped bytes, decode to a value or a `CodecError`: never another error, never a hang |
 * | `truncated input` | `truncated` (default `"error"`) | proper prefixes of each encoded sample (every cut for encodings up to 512 bytes, 256 sampled cuts above) give a `CodecError` (`"error"`), or a `CodecError` or a value that differs from the sample (`"differs"`, for formats where a prefix can itself be valid, such as a Protobuf message cut at a field boundary, or raw bytes). A sample may override the mode, e.g. the JSON text `12`, whose prefix `1` is valid JSON |
 *
 * This module is test support: it is not exported from any entrypoint.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { CodecError } from "../errors.ts";
import type { Codec } from "./types.ts";

/** How truncated encodings must fail: see the module doc. */
export type TruncationMode = "error" | "differs";

/** One named value a codec must round trip. */
export interface CodecSample<T> {
  /** Shown in assertion messages. */
  name: string;
  /** The value. */
  value: T;
  /** Overrides {@linkcode CodecConformanceSpec.truncated} for this sample. */
  truncated?: TruncationMode | false;
}

/** What a codec can represent, and how to build those values: the input of the suite. */
export interface CodecConformanceSpec<T> {
  /** The codec under test. */
  codec: Codec<T>;
  /** Test name prefix after `codec/`; set it when one codec is tested with several options.
   * @default {codec.name} */
  label?: string;
  /** Representative values; at least one. */
  samples: ReadonlyArray<CodecSample<T>>;
  /** Asserts that a decoded value matches the original (throws if not).
   * @default {assert.deepStrictEqual} */
  equal?: (actual: T, expected: T) => void;
  /** Empty values of each kind the codec has (`""`, `[]`, `{}`, empty bytes…). */
  empty?: readonly T[];
  /** Builds a value nested `depth` levels deep (`depth` containers around a leaf). */
  nested?: (depth: number) => T;
  /** The deepest nesting the codec accepts; one more must be a `CodecError`. */
  maxDepth?: number;
  /** Wraps a string in a value of the codec; `undefined` skips that string. */
  unicode?: (text: string) => T | undefined;
  /** Whether strings with unpaired UTF-16 surrogates round trip exactly.
   * @default {false} */
  loneSurrogates?: boolean;
  /** Wraps bytes in a value of the codec; `undefined` skips those bytes. */
  binary?: (bytes: Uint8Array) => T | undefined;
  /** Builds a value of about 16 MiB. */
  large?: () => T;
  /** Generates values for the property round trip. */
  arbitrary?: fc.Arbitrary<T>;
  /** Values encode must reject with `CodecError`. */
  unencodable?: ReadonlyArray<{ name: string; value: unknown }>;
  /** Byte strings decode must reject with `CodecError`. */
  undecodable?: ReadonlyArray<{ name: string; bytes: Uint8Array }>;
  /** Whether to run the random garbage case.
   * @default {true} */
  garbage?: boolean;
  /** How proper prefixes of encoded samples must fail; `false` skips the case.
   * @default {"error"} */
  truncated?: TruncationMode | false;
  /** fast-check runs for the property and garbage cases.
   * @default {500} */
  runs?: number;
}

const UNICODE_TEXTS: ReadonlyArray<[string, string]> = [
  ["ascii", "hello, world"],
  ["latin-1", "héllo wörld ÿ"],
  ["cjk", "日本語のテキスト"],
  ["astral plane", "𝄞 😀 👩‍👩‍👧 𠀀"],
  ["combining marks", "e\u0301 a\u0308\u0304"],
  ["nul and controls", "a\u0000b\u0001\u001f\u007f"],
  ["bom and specials", "\uFEFFx\uFFFD\uFFFF"],
  ["json-special", '"\\/\b\f\n\r\t'],
];

const LONE_SURROGATES: ReadonlyArray<[string, string]> = [
  ["high alone", "\uD800"],
  ["low alone", "\uDC00"],
  ["high then ascii", "a\uDBFFb"],
  ["reversed pair", "\uDC00\uD800"],
];

const DEEP_UNLIMITED = 64;
const ABSURD_DEPTH = 100_000;
const EXHAUSTIVE_CUTS = 512;
const SAMPLED_CUTS = 256;

/**
 * Registers the conformance cases for one codec.
 *
 * @param spec The codec and the value shapes it represents.
 */
export function codecConformance<T>(spec: CodecConformanceSpec<T>): void {
  const { codec } = spec;
  const label = spec.label ?? codec.name;
  const equal = spec.equal ?? ((a: T, b: T) => assert.deepStrictEqual(a, b));
  const runs = spec.runs ?? 500;
  const roundTrip = (value: T, what: string): void => {
    let bytes: Uint8Array;
    try {
      bytes = codec.encode(value);
    } catch (cause) {
      throw new Error(`${label}: encoding ${what} failed`, { cause });
    }
    assert.ok(bytes instanceof Uint8Array, `${label}: encode(${what}) is not a Uint8Array`);
    let decoded: T;
    try {
      decoded = codec.decode(bytes);
    } catch (cause) {
      throw new Error(`${label}: decoding ${what} failed`, { cause });
    }
    equal(decoded, value);
  };
  const test = (name: string, enabled: boolean, fn: () => void): void => {
    Deno.test({
      name: `codec/${label}: ${name}${enabled ? "" : " (not declared)"}`,
      ignore: !enabled,
      fn,
    });
  };

  test("name", true, () => {
    assert.equal(typeof codec.name, "string");
    assert.match(codec.name, /^\S+$/, "a codec name is a non-empty token");
  });

  test("round trip", spec.samples.length > 0, () => {
    const encoded = spec.samples.map((s) => {
      const bytes = codec.encode(s.value);
      return { sample: s, bytes, copy: bytes.slice() };
    });
    for (const { sample, bytes, copy } of encoded) {
      assert.deepStrictEqual(bytes, copy, `${sample.name}: later encodes changed these bytes`);
      equal(codec.decode(bytes), sample.value);
      assert.deepStrictEqual(bytes, copy, `${sample.name}: decode changed its input`);
      const padded = new Uint8Array(bytes.length + 16).fill(0xff);
      padded.set(bytes, 7);
      equal(codec.decode(padded.subarray(7, 7 + bytes.length)), sample.value);
    }
  });

  const encodeView = codec.encodeView?.bind(codec);
  test("encode view", encodeView !== undefined, () => {
    if (encodeView === undefined) return;
    const owned = spec.samples.map((s) => codec.encode(s.value));
    const expected = owned.map((bytes) => bytes.slice());
    for (const [i, first] of spec.samples.entries()) {
      const view = encodeView(first.value);
      assert.ok(view instanceof Uint8Array, `${first.name}: encodeView is not a Uint8Array`);
      assert.deepStrictEqual(view, expected[i], `${first.name}: encodeView differs from encode`);
      // Valid only until the next call: keeping the bytes means copying them now.
      const kept = view.slice();
      for (const [j, second] of spec.samples.entries()) {
        const fresh = codec.encode(second.value);
        assert.deepStrictEqual(
          encodeView(second.value),
          expected[j],
          `${second.name} after ${first.name}: encodeView differs from encode`,
        );
        assert.deepStrictEqual(
          fresh,
          expected[j],
          `${second.name}: encodeView changed encode's bytes`,
        );
      }
      equal(codec.decode(kept), first.value);
    }
    for (const [i, bytes] of owned.entries()) {
      assert.deepStrictEqual(bytes, expected[i], `${spec.samples[i].name}: encode's bytes changed`);
    }
    for (const { name, value } of spec.unencodable ?? []) {
      assertCodecError(codec, "encode", () => encodeView(value as T), `view of ${name}`);
      assert.deepStrictEqual(encodeView(spec.samples[0].value), expected[0], `view after ${name}`);
    }
  });

  test("empty values", spec.empty !== undefined, () => {
    for (const [i, value] of (spec.empty ?? []).entries()) roundTrip(value, `empty[${i}]`);
  });

  const nested = spec.nested;
  test("nesting", nested !== undefined, () => {
    if (nested === undefined) return;
    if (spec.maxDepth === undefined) {
      roundTrip(nested(DEEP_UNLIMITED), `nested(${DEEP_UNLIMITED})`);
    } else {
      roundTrip(nested(spec.maxDepth), `nested(maxDepth = ${spec.maxDepth})`);
      const tooDeep = nested(spec.maxDepth + 1);
      const bytes = attempt(codec, "encode", () => codec.encode(tooDeep));
      if (bytes !== undefined) {
        assertCodecError(codec, "decode", () => codec.decode(bytes));
      }
    }
    const absurd = nested(ABSURD_DEPTH);
    const bytes = attempt(codec, "encode", () => codec.encode(absurd));
    if (bytes !== undefined) attempt(codec, "decode", () => codec.decode(bytes));
  });

  const unicode = spec.unicode;
  test("unicode", unicode !== undefined, () => {
    if (unicode === undefined) return;
    for (const [what, text] of UNICODE_TEXTS) {
      const value = unicode(text);
      if (value !== undefined) roundTrip(value, `unicode ${what}`);
    }
    for (const [what, text] of LONE_SURROGATES) {
      const value = unicode(text);
      if (value === undefined) continue;
      if (spec.loneSurrogates) {
        roundTrip(value, `lone surrogate ${what}`);
      } else {
        const bytes = attempt(codec, "encode", () => codec.encode(value));
        if (bytes !== undefined) attempt(codec, "decode", () => codec.decode(bytes));
      }
    }
  });

  const binary = spec.binary;
  test("binary", binary !== undefined, () => {
    if (binary === undefined) return;
    const noise = new Uint8Array(64 * 1024);
    fillNoise(noise, 0x9e3779b9);
    const cases: Array<[string, Uint8Array]> = [
      ["empty", new Uint8Array(0)],
      ["every byte value", Uint8Array.from({ length: 256 }, (_, i) => i)],
      ["64 KiB noise", noise],
    ];
    for (const [what, bytes] of cases) {
      const value = binary(bytes);
      if (value !== undefined) roundTrip(value, `binary ${what}`);
    }
  });

  const large = spec.large;
  test("16 MiB value", large !== undefined, () => {
    if (large === undefined) return;
    const value = large();
    roundTrip(value, "16 MiB value");
    if (encodeView !== undefined) {
      assert.ok(equalBytes(encodeView(value), codec.encode(value)), "16 MiB value: view differs");
    }
  });

  const arbitrary = spec.arbitrary;
  test("property round trip", arbitrary !== undefined, () => {
    if (arbitrary === undefined) return;
    fc.assert(
      fc.property(arbitrary, (value) => {
        const bytes = codec.encode(value);
        if (encodeView !== undefined) {
          assert.deepStrictEqual(encodeView(value), bytes, "encodeView differs from encode");
        }
        equal(codec.decode(bytes), value);
      }),
      { numRuns: runs },
    );
  });

  test("unencodable values", spec.unencodable !== undefined, () => {
    for (const { name, value } of spec.unencodable ?? []) {
      assertCodecError(codec, "encode", () => codec.encode(value as T), name);
    }
  });

  test("undecodable bytes", spec.undecodable !== undefined, () => {
    for (const { name, bytes } of spec.undecodable ?? []) {
      assertCodecError(codec, "decode", () => codec.decode(bytes), name);
    }
  });

  test("random garbage", spec.garbage ?? true, () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
        attempt(codec, "decode", () => codec.decode(bytes));
      }),
      { numRuns: runs },
    );
    const encoded = spec.samples.map((s) => codec.encode(s.value)).filter((b) => b.length > 0);
    if (encoded.length === 0) return;
    fc.assert(
      fc.property(
        fc.nat({ max: encoded.length - 1 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), {
          minLength: 1,
          maxLength: 8,
        }),
        (which, flips) => {
          const bytes = encoded[which].slice();
          for (const [at, mask] of flips) bytes[at % bytes.length] ^= mask;
          attempt(codec, "decode", () => codec.decode(bytes));
        },
      ),
      { numRuns: runs },
    );
  });

  const truncated = spec.truncated ?? "error";
  test("truncated input", truncated !== false, () => {
    for (const sample of spec.samples) {
      const mode = sample.truncated ?? truncated;
      if (mode === false) continue;
      const bytes = codec.encode(sample.value);
      for (const cut of cutPoints(bytes.length)) {
        const prefix = bytes.slice(0, cut);
        const what = `${sample.name} cut to ${cut} of ${bytes.length} bytes`;
        if (mode === "error") {
          assertCodecError(codec, "decode", () => codec.decode(prefix), what);
          continue;
        }
        const decoded = attempt(codec, "decode", () => codec.decode(prefix));
        if (decoded === undefined) continue;
        assert.throws(() => equal(decoded, sample.value), `${what} decoded to the whole sample`);
      }
    }
  });
}

/**
 * Runs `fn`; returns its result, or `undefined` if it threw a `CodecError` from `codec` for
 * `operation`. Any other error fails the test.
 */
function attempt<R>(
  codec: Codec<unknown>,
  operation: "encode" | "decode",
  fn: () => R,
): R | undefined {
  try {
    return fn();
  } catch (err) {
    checkCodecError(err, codec, operation);
    return undefined;
  }
}

function assertCodecError(
  codec: Codec<unknown>,
  operation: "encode" | "decode",
  fn: () => unknown,
  what = "",
): void {
  let threw = false;
  try {
    fn();
  } catch (err) {
    threw = true;
    checkCodecError(err, codec, operation);
  }
  assert.ok(threw, `${codec.name}: ${operation} ${what} should throw CodecError`);
}

function checkCodecError(err: unknown, codec: Codec<unknown>, operation: string): void {
  if (!(err instanceof CodecError)) {
    throw new Error(`${codec.name}: ${operation} threw something other than CodecError`, {
      cause: err,
    });
  }
  assert.equal(err.codec, codec.name);
  assert.equal(err.operation, operation);
}

/** Every proper-prefix length for short encodings; a spread of them plus the edges above. */
function cutPoints(length: number): number[] {
  if (length <= EXHAUSTIVE_CUTS) return Array.from({ length }, (_, i) => i);
  const cuts = new Set([0, 1, 2, 3, length - 3, length - 2, length - 1]);
  for (let i = 0; i < SAMPLED_CUTS; i++) cuts.add(Math.floor((i * length) / SAMPLED_CUTS));
  return [...cuts].filter((c) => c >= 0 && c < length).sort((a, b) => a - b);
}

/** Byte equality without deepStrictEqual's per-index walk, for multi-MiB buffers. */
function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Deterministic xorshift noise, so a failure reproduces. */
function fillNoise(bytes: Uint8Array, seed: number): void {
  let x = seed | 0 || 1;
  for (let i = 0; i < bytes.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x & 0xff;
  }
}
