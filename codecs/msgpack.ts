/**
 * The MessagePack codec, with extension types so that the JavaScript values JSON loses come
 * back as they went, and with values from other MessagePack implementations read exactly or
 * refused with a `CodecError` — never rounded or replaced in silence. `docs/protocol.md`
 * ("MessagePack extension types") specifies the wire form for peers in other languages.
 *
 * | value | on the wire | decodes as |
 * | --- | --- | --- |
 * | `null`, `undefined` | nil | `null` |
 * | boolean, string | bool, str (UTF-8; a string with a lone surrogate, which has no UTF-8 form, is a `CodecError`) | the same; invalid UTF-8 is a `CodecError` (option `invalidUtf8`) |
 * | number | int when it is a safe integer, else float 64 | a number |
 * | int of any width from another peer | — | a number when it is a safe integer, else a `bigint` (never rounded) |
 * | `Uint8Array` (and other `ArrayBufferView`s) | bin | a `Uint8Array` view over the input |
 * | array, plain object | array, map with string keys | the same |
 * | map with any key that is no string, from another peer | — | a `Map` (keys as decoded, in wire order) |
 * | `Date` | the standard timestamp extension, type `-1` | a `Date`; a timestamp a `Date` cannot hold exactly is a `CodecError` (option `subMillisecond`) |
 * | `Map` | extension type {@linkcode MSGPACK_EXT_MAP} (`1`): a MessagePack array `[k0, v0, k1, v1, …]` | a `Map` |
 * | `Set` | extension type {@linkcode MSGPACK_EXT_SET} (`2`): a MessagePack array of the members | a `Set` |
 * | `bigint` | extension type {@linkcode MSGPACK_EXT_BIGINT} (`0x42`): minimal big-endian two's complement, the layout msgpackr uses (option `bigint: "int"` writes a plain int when one holds it) | a `bigint` |
 * | other extension types | — | {@linkcode ExtData}, which encodes back unchanged |
 *
 * A `bigint` keeps its extension by default even when small, because a plain int decodes as a
 * number when it is safe (which is what a peer in another language means by it): `5n` would
 * come back as `5`. Map and Set payloads are MessagePack documents of their own, so any
 * MessagePack library can read them. Class instances encode as maps of their own enumerable
 * properties (an `ArrayBuffer`, which has none, as `{}`: send a `Uint8Array`); functions and
 * symbols as values are a `CodecError`, while symbol-keyed properties are left out, as
 * MessagePack maps of other libraries leave them (the structured codec refuses them). A map key
 * `"__proto__"` decodes as an ordinary own property: the decoded object keeps `Object.prototype`.
 *
 * @example
 * ```ts
 * import { msgpackCodec } from "@conduit/ipc/codecs/msgpack";
 * import assert from "node:assert/strict";
 *
 * const codec = msgpackCodec();
 * const value = {
 *   at: new Date("2024-05-06T07:08:09.010Z"),
 *   ids: new Set([1, 2]),
 *   byName: new Map([["a", 1n << 70n]]),
 *   blob: new Uint8Array([1, 2, 3]),
 * };
 * assert.deepStrictEqual(codec.decode(codec.encode(value)), value);
 * // A uint64 from another peer past 2^53 is a bigint, not a rounded number.
 * const big = new Uint8Array([0xcf, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01]);
 * assert.equal(codec.decode(big), 2n ** 53n + 1n);
 * ```
 *
 * @module
 */

import { CodecError } from "../errors.ts";
import {
  bigintToBytes,
  bytesToBigint,
  decodeTimestamp,
  ENCODE_AS_IS,
  encodeTimestamp,
  ExtData,
  FIRST_EXT_DATA,
  type RecordHooks,
  SET_RECORD_HOOKS,
  type SubMillisecond,
} from "./_msgpack_ext.ts";
import { MsgpackReader, type ReaderOptions } from "./_msgpack_reader.ts";
import { MsgpackWriter } from "./_msgpack_writer.ts";
import type { Codec } from "./types.ts";

export type { Codec };
export { ExtData };

/** The MessagePack spec's timestamp extension type: -1. */
const EXT_TIMESTAMP = -1;

/** The codec's `name` on the wire: `"msgpack"`. */
export const MSGPACK_CODEC_NAME = "msgpack";

/** The extension type of a `Map`: `1`. */
export const MSGPACK_EXT_MAP = 1;
/** The extension type of a `Set`: `2`. */
export const MSGPACK_EXT_SET = 2;
/** The extension type of a `bigint`: `0x42` (`"B"`), as in msgpackr. */
export const MSGPACK_EXT_BIGINT = 0x42;

/** The default `maxDepth`: `100`, the library's own default. */
export const DEFAULT_MSGPACK_MAX_DEPTH = 100;
/** The default of each length limit: `4_294_967_295`, the largest length MessagePack can
 * state, so no limit beyond the format's (the frame size bounds real input). */
export const DEFAULT_MSGPACK_MAX_LENGTH = 4_294_967_295;

/** Limits of {@linkcode msgpackCodec}, each checked from a header before allocating, and the
 * choices for values that have more than one reading. */
export interface MsgpackCodecOptions {
  /**
   * The deepest level a value may sit at, the top-level value being level 1: `100` allows 99
   * arrays or maps around a leaf. One level more is a `CodecError`, when encoding and when
   * decoding. A `Map` or `Set` payload counts its levels afresh, and such payloads may nest
   * `maxDepth` deep.
   *
   * @default {DEFAULT_MSGPACK_MAX_DEPTH}
   */
  maxDepth?: number;
  /** The longest string accepted when decoding, in UTF-8 bytes.
   * @default {DEFAULT_MSGPACK_MAX_LENGTH} */
  maxStrLength?: number;
  /** The longest binary value accepted when decoding, in bytes.
   * @default {DEFAULT_MSGPACK_MAX_LENGTH} */
  maxBinLength?: number;
  /** The most elements an array may announce when decoding.
   * @default {DEFAULT_MSGPACK_MAX_LENGTH} */
  maxArrayLength?: number;
  /** The most entries a map may announce when decoding.
   * @default {DEFAULT_MSGPACK_MAX_LENGTH} */
  maxMapLength?: number;
  /** The longest extension payload accepted when decoding, in bytes.
   * @default {DEFAULT_MSGPACK_MAX_LENGTH} */
  maxExtLength?: number;
  /**
   * How a `bigint` is written: `"ext"` as extension type `0x42`, so that it decodes as a
   * `bigint` again whatever its size; `"int"` as a plain MessagePack int when it fits 64 bits
   * (extension `0x42` beyond), for peers that know no extension — a safe-range value then
   * decodes as a number.
   *
   * @default {"ext"}
   */
  bigint?: "ext" | "int";
  /**
   * What decoding does with a string that is not valid UTF-8: `"error"` makes it a
   * `CodecError`, `"replace"` puts U+FFFD in place of each bad sequence (as `TextDecoder`).
   *
   * @default {"error"}
   */
  invalidUtf8?: "error" | "replace";
  /**
   * What decoding does with a timestamp that has a part finer than a millisecond, which a
   * `Date` cannot hold (Python's `datetime` has microseconds): `"error"` makes it a
   * `CodecError`, `"truncate"` rounds it down to the millisecond. A timestamp outside `Date`'s
   * range is a `CodecError` either way.
   *
   * @default {"error"}
   */
  subMillisecond?: "error" | "truncate";
}

/**
 * Creates a MessagePack codec. Each instance keeps its own reusable encoder and decoder (and
 * their scratch buffer), so create one per channel rather than one per message; an instance
 * is not re-entrant across threads but serves any number of messages. It is conduit's own
 * (no npm package); its bytes are those `@msgpack/msgpack`'s `Encoder` writes for the same
 * values (unless `bigint: "int"`), which the tests check.
 *
 * @typeParam T The values this codec carries.
 * @param options Limits, and the choices for values other implementations send.
 * @returns A codec named `"msgpack"`.
 *
 * @example Limits are a CodecError
 * ```ts
 * import { msgpackCodec } from "@conduit/ipc/codecs/msgpack";
 * import { CodecError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const strict = msgpackCodec({ maxStrLength: 4 });
 * const bytes = msgpackCodec().encode("hello");
 * assert.throws(() => strict.decode(bytes), CodecError);
 * assert.throws(() => strict.decode(bytes.subarray(0, 3)), CodecError); // truncated
 * ```
 *
 * @example Values from other implementations: exact, or a CodecError unless told otherwise
 * ```ts
 * import { msgpackCodec } from "@conduit/ipc/codecs/msgpack";
 * import { CodecError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const codec = msgpackCodec();
 * // {1: "one"} from a Python peer: a map with an int key is a Map.
 * assert.deepStrictEqual(codec.decode(new Uint8Array([0x81, 0x01, 0xa3, 0x6f, 0x6e, 0x65])), new Map([[1, "one"]]));
 * // A timestamp of 1 s + 1 µs (Python's datetime has microseconds) does not fit a Date.
 * const micro = new Uint8Array([0xd7, 0xff, 0x00, 0x00, 0x0f, 0xa0, 0x00, 0x00, 0x00, 0x01]);
 * assert.throws(() => codec.decode(micro), CodecError);
 * assert.deepStrictEqual(msgpackCodec({ subMillisecond: "truncate" }).decode(micro), new Date(1000));
 * // Invalid UTF-8 is an error, or U+FFFD when asked.
 * const bad = new Uint8Array([0xa1, 0xff]);
 * assert.throws(() => codec.decode(bad), CodecError);
 * assert.equal(msgpackCodec({ invalidUtf8: "replace" }).decode(bad), "\ufffd");
 * // A bigint that fits 64 bits as a plain int, for a peer without the extension.
 * assert.deepStrictEqual(msgpackCodec({ bigint: "int" }).encode(5n), new Uint8Array([0x05]));
 * ```
 */
export function msgpackCodec<T = unknown>(options: MsgpackCodecOptions = {}): Codec<T> {
  return new _MsgpackCodec<T>(options);
}

class _MsgpackCodec<T> implements Codec<T> {
  readonly name: string = MSGPACK_CODEC_NAME;
  readonly #maxDepth: number;
  readonly #bigintAsInt: boolean;
  readonly #subMillisecond: SubMillisecond;
  readonly #reading: ReaderOptions;
  /** Index 0 serves the top-level value, index n a Map/Set payload n levels down. */
  #writers: MsgpackWriter[] = [];
  #readers: MsgpackReader[] = [];
  #level = 0;
  /** Records sent by shape, for the structured codec's writers and readers. */
  #records: RecordHooks | undefined;
  /** The first ExtData the decode under way (or the last one) made. */
  #firstExt: ExtData | undefined;

  constructor(options: MsgpackCodecOptions) {
    this.#maxDepth = limit(options, "maxDepth", DEFAULT_MSGPACK_MAX_DEPTH, 1);
    this.#bigintAsInt = choice(options, "bigint", ["ext", "int"]) === "int";
    this.#subMillisecond = choice(options, "subMillisecond", ["error", "truncate"]);
    this.#reading = {
      maxDepth: this.#maxDepth,
      maxStrLength: limit(options, "maxStrLength", DEFAULT_MSGPACK_MAX_LENGTH, 0),
      maxBinLength: limit(options, "maxBinLength", DEFAULT_MSGPACK_MAX_LENGTH, 0),
      maxArrayLength: limit(options, "maxArrayLength", DEFAULT_MSGPACK_MAX_LENGTH, 0),
      maxMapLength: limit(options, "maxMapLength", DEFAULT_MSGPACK_MAX_LENGTH, 0),
      maxExtLength: limit(options, "maxExtLength", DEFAULT_MSGPACK_MAX_LENGTH, 0),
      lenientUtf8: choice(options, "invalidUtf8", ["error", "replace"]) === "replace",
    };
    this.#writers.push(this.#newWriter());
    this.#readers.push(this.#newReader());
  }

  encode(value: T): Uint8Array {
    return this.encodeView(value).slice();
  }

  encodeView(value: T): Uint8Array {
    try {
      return this.#writers[0].encode(value);
    } catch (cause) {
      throw new CodecError(this.name, "encode", this.#explainEncode(cause));
    } finally {
      this.#level = 0;
    }
  }

  decode(bytes: Uint8Array): T {
    this.#firstExt = undefined;
    try {
      return this.#readers[0].read(bytes) as T;
    } catch (cause) {
      throw new CodecError(this.name, "decode", explainDecode(cause));
    } finally {
      this.#level = 0;
    }
  }

  /** Sets the hooks of records sent by shape on every writer and reader (the structured codec's). */
  [SET_RECORD_HOOKS](records: RecordHooks | undefined): void {
    this.#records = records;
    for (const writer of this.#writers) writer.records = records;
    for (const reader of this.#readers) reader.records = records;
  }

  /** The first ExtData the last decode made (see FIRST_EXT_DATA). */
  [FIRST_EXT_DATA](): ExtData | undefined {
    return this.#firstExt;
  }

  /** `value` encoded if it goes as it is (the structured codec's first pass), else undefined. */
  [ENCODE_AS_IS](value: unknown, maxDepth: number): Uint8Array | undefined {
    return this.#writers[0].encodeAsIs(value, maxDepth);
  }

  #newWriter(): MsgpackWriter {
    const writer = new MsgpackWriter(
      (object) => this.#tryToEncode(object),
      this.#maxDepth,
      this.#bigintAsInt,
    );
    writer.records = this.#records;
    return writer;
  }

  #newReader(): MsgpackReader {
    const reader = new MsgpackReader(
      this.#reading,
      (data, type) => this.#decodeExtension(data, type),
    );
    reader.records = this.#records;
    return reader;
  }

  #tryToEncode(object: unknown): ExtData | null {
    if (typeof object === "bigint") return new ExtData(MSGPACK_EXT_BIGINT, bigintToBytes(object));
    if (typeof object !== "object" || object === null) return null;
    if (object instanceof Date) {
      if (Number.isNaN(object.getTime())) {
        throw new RangeError("An invalid Date has no MessagePack timestamp");
      }
      return new ExtData(EXT_TIMESTAMP, encodeTimestamp(object));
    }
    if (object instanceof Map) {
      const items = new Array(object.size * 2);
      let i = 0;
      for (const [key, value] of object) {
        items[i++] = key;
        items[i++] = value;
      }
      return new ExtData(MSGPACK_EXT_MAP, this.#encodeNested(items));
    }
    if (object instanceof Set) return new ExtData(MSGPACK_EXT_SET, this.#encodeNested([...object]));
    if (object instanceof ExtData) return object;
    return null;
  }

  /** The parent encoder copies the returned bytes before this level's encoder runs again. */
  #encodeNested(items: unknown[]): Uint8Array {
    const level = this.#level + 1;
    if (level > this.#maxDepth) {
      throw new RangeError(`Map and Set values nest deeper than maxDepth (${this.#maxDepth})`);
    }
    const writer = this.#writers[level] ??= this.#newWriter();
    this.#level = level;
    try {
      return writer.encode(items);
    } finally {
      this.#level = level - 1;
    }
  }

  #decodeExtension(data: Uint8Array, type: number): unknown {
    switch (type) {
      case EXT_TIMESTAMP:
        return decodeTimestamp(data, this.#subMillisecond);
      case MSGPACK_EXT_MAP: {
        const items = this.#decodeNested(data, "Map");
        if (items.length % 2 !== 0) {
          throw new TypeError(`A Map payload needs key/value pairs, got ${items.length} items`);
        }
        const map = new Map();
        for (let i = 0; i < items.length; i += 2) map.set(items[i], items[i + 1]);
        return map;
      }
      case MSGPACK_EXT_SET:
        return new Set(this.#decodeNested(data, "Set"));
      case MSGPACK_EXT_BIGINT:
        return bytesToBigint(data);
      default: {
        const ext = new ExtData(type, data);
        this.#firstExt ??= ext;
        return ext;
      }
    }
  }

  #decodeNested(data: Uint8Array, what: string): unknown[] {
    const level = this.#level + 1;
    if (level > this.#maxDepth) {
      throw new RangeError(`Map and Set values nest deeper than maxDepth (${this.#maxDepth})`);
    }
    this.#level = level;
    try {
      const items = (this.#readers[level] ??= this.#newReader()).read(data);
      if (!Array.isArray(items)) throw new TypeError(`A ${what} payload must be an array`);
      return items;
    } finally {
      this.#level = level - 1;
    }
  }

  #explainEncode(cause: unknown): unknown {
    if (cause instanceof Error && cause.message.startsWith("Too deep objects")) {
      return new RangeError(`Value nests deeper than maxDepth (${this.#maxDepth})`, { cause });
    }
    return cause;
  }
}

function limit(
  options: MsgpackCodecOptions,
  key: keyof MsgpackCodecOptions,
  fallback: number,
  min: number,
): number {
  const value = options[key] ?? fallback;
  if (
    typeof value !== "number" || !Number.isInteger(value) || value < min ||
    value > DEFAULT_MSGPACK_MAX_LENGTH
  ) {
    throw new RangeError(`${key} must be an integer from ${min} to 4294967295, got ${value}`);
  }
  return value;
}

function choice<const C extends string>(
  options: MsgpackCodecOptions,
  key: keyof MsgpackCodecOptions,
  choices: readonly [C, ...C[]],
): C {
  const value = options[key] ?? choices[0];
  if (!(choices as readonly unknown[]).includes(value)) {
    throw new TypeError(
      `${key} must be ${choices.map((c) => `"${c}"`).join(" or ")}, got ${value}`,
    );
  }
  return value as C;
}

/** A stack overflow on absurd nesting (a maxDepth set in the millions) is named as such. */
function explainDecode(cause: unknown): unknown {
  if (cause instanceof RangeError && cause.message.startsWith("Maximum call stack")) {
    return new RangeError("Value nests too deep for the call stack (lower maxDepth)", { cause });
  }
  return cause;
}
