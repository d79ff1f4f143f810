/**
 * The MessagePack codec, on `npm:@msgpack/msgpack`, with extension types so that the
 * JavaScript values JSON loses come back as they went.
 *
 * | value | on the wire |
 * | --- | --- |
 * | `null`, `undefined` | nil (both decode as `null`) |
 * | boolean, string | bool, str (UTF-8) |
 * | number | int when it is a safe integer, else float 64 |
 * | `Uint8Array` (and other `ArrayBufferView`s) | bin (decodes as a `Uint8Array` view over the input) |
 * | array, plain object | array, map with string keys |
 * | `Date` | the standard timestamp extension, type `-1` (millisecond precision) |
 * | `Map` | extension type {@linkcode MSGPACK_EXT_MAP} (`1`): a MessagePack array `[k0, v0, k1, v1, …]` |
 * | `Set` | extension type {@linkcode MSGPACK_EXT_SET} (`2`): a MessagePack array of the members |
 * | `bigint` | extension type {@linkcode MSGPACK_EXT_BIGINT} (`0x42`): minimal big-endian two's complement, the layout msgpackr uses for the same type |
 * | other extension types | decode as `ExtData` and encode back unchanged |
 *
 * Map and Set payloads are MessagePack documents of their own, so any MessagePack library can
 * read them. Class instances encode as maps of their own enumerable properties; functions and
 * symbols are a `CodecError`. 64-bit integers from other peers decode as numbers, losing
 * precision above 2^53 (send a `bigint` for exact values). A map key `"__proto__"` decodes as
 * an ordinary own property: the decoded object keeps `Object.prototype`.
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
 * ```
 *
 * @module
 */

// The ESM build, named explicitly: the package's main entry resolves to its CommonJS build in
// Deno, which loads 5-10x slower (it dominated a worker's spawn-to-first-reply), and the
// CachedKeyDecoder below comes from the ESM build too, so only one build loads.
import {
  DecodeError,
  Decoder,
  decodeTimestampExtension,
  encodeTimestampExtension,
  EXT_TIMESTAMP,
  ExtData,
  type ExtensionCodecType,
} from "@msgpack/msgpack/dist.esm/index.mjs";
import { CachedKeyDecoder } from "@msgpack/msgpack/dist.esm/CachedKeyDecoder.mjs";
import { CodecError } from "../errors.ts";
import { FALLBACK, MsgpackReader } from "./_msgpack_reader.ts";
import { MsgpackWriter } from "./_msgpack_writer.ts";
import type { Codec } from "./types.ts";

export type { Codec };

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

/** Limits of {@linkcode msgpackCodec}; each is checked from a header, before allocating. */
export interface MsgpackCodecOptions {
  /**
   * The deepest level a value may sit at when encoding, the top-level value being level 1:
   * `100` allows 99 arrays or maps around a leaf. One level more is a `CodecError`. A `Map`
   * or `Set` payload counts its levels afresh, and such payloads may nest `maxDepth` deep.
   * Decoding needs no such limit for its own safety (the decoder is iterative), but Map and Set
   * payloads nested deeper than `maxDepth` are refused.
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
}

/**
 * Creates a MessagePack codec. Each instance keeps its own reusable encoder and decoder (and
 * their scratch buffer), so create one per channel rather than one per message; an instance
 * is not re-entrant across threads but serves any number of messages. Its bytes are those of
 * `@msgpack/msgpack`'s own `Encoder`, and it decodes what the library's `Decoder` decodes, to
 * the same values; both directions run on faster routines of this module for what they cover
 * and on the library for the rest.
 *
 * @typeParam T The values this codec carries.
 * @param options Decoding limits and the encoding depth limit.
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
 */
export function msgpackCodec<T = unknown>(options: MsgpackCodecOptions = {}): Codec<T> {
  return new _MsgpackCodec<T>(options);
}

class _MsgpackCodec<T> implements Codec<T> {
  readonly name: string = MSGPACK_CODEC_NAME;
  readonly #maxDepth: number;
  readonly #limits: Required<Omit<MsgpackCodecOptions, "maxDepth">>;
  readonly #extensions: ExtensionCodecType<undefined>;
  /** Index 0 serves the top-level value, index n a Map/Set payload n levels down. */
  #writers: MsgpackWriter[] = [];
  #readers: MsgpackReader[] = [];
  #decoders: Decoder[] = [];
  #level = 0;
  /** Cleared for the rest of a message once the fast reader hands it to the library. */
  #fast = true;

  constructor(options: MsgpackCodecOptions) {
    this.#maxDepth = limit(options, "maxDepth", DEFAULT_MSGPACK_MAX_DEPTH, 1);
    this.#limits = {
      maxStrLength: limit(options, "maxStrLength", DEFAULT_MSGPACK_MAX_LENGTH, 0),
      maxBinLength: limit(options, "maxBinLength", DEFAULT_MSGPACK_MAX_LENGTH, 0),
      maxArrayLength: limit(options, "maxArrayLength", DEFAULT_MSGPACK_MAX_LENGTH, 0),
      maxMapLength: limit(options, "maxMapLength", DEFAULT_MSGPACK_MAX_LENGTH, 0),
      maxExtLength: limit(options, "maxExtLength", DEFAULT_MSGPACK_MAX_LENGTH, 0),
    };
    this.#extensions = {
      tryToEncode: (object) => this.#tryToEncode(object),
      decode: (data, type) => this.#decodeExtension(data, type),
    };
    this.#writers.push(this.#newWriter());
    this.#readers.push(this.#newReader());
    this.#decoders.push(this.#newDecoder());
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
    try {
      const value = this.#readers[0].read(bytes);
      if (value !== FALLBACK) return value as T;
      this.#fast = false;
      return this.#decoders[0].decode(bytes) as T;
    } catch (cause) {
      throw new CodecError(this.name, "decode", explainDecode(cause, bytes.length));
    } finally {
      this.#level = 0;
      this.#fast = true;
    }
  }

  #newWriter(): MsgpackWriter {
    return new MsgpackWriter((object) => this.#tryToEncode(object), this.#maxDepth);
  }

  #newReader(): MsgpackReader {
    return new MsgpackReader(
      this.#limits,
      (data, type) => this.#decodeExtension(data, type),
      protoSafeKeys,
    );
  }

  #newDecoder(): Decoder {
    const decoder: Decoder = new Decoder({
      ...this.#limits,
      extensionCodec: this.#extensions,
      keyDecoder: protoSafeKeys,
      mapKeyConverter: (key) => convertKey(decoder, key),
    });
    return decoder;
  }

  #tryToEncode(object: unknown): ExtData | null {
    if (typeof object === "bigint") return new ExtData(MSGPACK_EXT_BIGINT, bigintToBytes(object));
    if (typeof object !== "object" || object === null) return null;
    if (object instanceof Date) {
      if (Number.isNaN(object.getTime())) {
        throw new RangeError("An invalid Date has no MessagePack timestamp");
      }
      return new ExtData(EXT_TIMESTAMP, encodeTimestampExtension(object) as Uint8Array);
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
        return decodeTimestampExtension(data);
      case MSGPACK_EXT_MAP: {
        const items = this.#decodeNested(data, "Map");
        if (items.length % 2 !== 0) {
          throw new DecodeError(`A Map payload needs key/value pairs, got ${items.length} items`);
        }
        const map = new Map();
        for (let i = 0; i < items.length; i += 2) map.set(items[i], items[i + 1]);
        return map;
      }
      case MSGPACK_EXT_SET:
        return new Set(this.#decodeNested(data, "Set"));
      case MSGPACK_EXT_BIGINT:
        return bytesToBigint(data);
      default:
        return new ExtData(type, data);
    }
  }

  #decodeNested(data: Uint8Array, what: string): unknown[] {
    const level = this.#level + 1;
    if (level > this.#maxDepth) {
      throw new DecodeError(`Map and Set values nest deeper than maxDepth (${this.#maxDepth})`);
    }
    this.#level = level;
    try {
      let items: unknown;
      if (this.#fast) {
        items = (this.#readers[level] ??= this.#newReader()).read(data);
        // The whole message goes to the library then, not this payload alone: a payload
        // decoded twice at every level of nesting would take 2^depth decodes.
        if (items === FALLBACK) throw FALLBACK;
      } else {
        items = (this.#decoders[level] ??= this.#newDecoder()).decode(data);
      }
      if (!Array.isArray(items)) throw new DecodeError(`A ${what} payload must be an array`);
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
  if (!Number.isInteger(value) || value < min || value > DEFAULT_MSGPACK_MAX_LENGTH) {
    throw new RangeError(`${key} must be an integer from ${min} to 4294967295, got ${value}`);
  }
  return value;
}

/** The library's ways of saying the input ended early: its own marker, or a DataView read. */
const TRUNCATED = /^Insufficient data|^Offset is outside the bounds of the DataView/;

function explainDecode(cause: unknown, length: number): unknown {
  if (cause instanceof RangeError && TRUNCATED.test(cause.message)) {
    return new RangeError(`Input of ${length} byte(s) ends inside a value`, { cause });
  }
  return cause;
}

// @msgpack/msgpack refuses a "__proto__" map key outright, since assigning it would replace
// the object's prototype. We keep it as data instead: the key decoder hands the decoder an
// opaque marker in place of the string (so its check passes), and the key converter defines
// "__proto__" as an own data property on the map being built before the decoder assigns the
// value, which then lands on that property. Covered by the "__proto__" tests.
const PROTO_KEY = Object.freeze({ key: "__proto__" }) as unknown as string;
const PROTO_BYTES = new TextEncoder().encode("__proto__");
const cachedKeys = new CachedKeyDecoder();
const protoSafeKeys = {
  canBeCached: (byteLength: number): boolean => cachedKeys.canBeCached(byteLength),
  decode(bytes: Uint8Array, offset: number, byteLength: number): string {
    if (byteLength === PROTO_BYTES.length && bytes[offset] === 0x5f && isProto(bytes, offset)) {
      return PROTO_KEY;
    }
    return cachedKeys.decode(bytes, offset, byteLength);
  },
};

function isProto(bytes: Uint8Array, offset: number): boolean {
  for (let i = 0; i < PROTO_BYTES.length; i++) {
    if (bytes[offset + i] !== PROTO_BYTES[i]) return false;
  }
  return true;
}

/** The decoder state this module reaches into (pinned @msgpack/msgpack 3.1). */
interface DecoderInternals {
  stack: { top(): { map?: Record<string, unknown> } | undefined };
}

function convertKey(decoder: Decoder, key: unknown): string | number {
  if (typeof key === "string" || typeof key === "number") return key;
  if (key !== PROTO_KEY) {
    throw new DecodeError(`Map keys must be strings or numbers, not ${typeof key}`);
  }
  const map = (decoder as unknown as DecoderInternals).stack.top()?.map;
  if (map === undefined) throw new DecodeError("A __proto__ key outside a map");
  Object.defineProperty(map, "__proto__", {
    value: undefined,
    writable: true,
    enumerable: true,
    configurable: true,
  });
  return "__proto__";
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

function bigintToBytes(value: bigint): Uint8Array {
  const negative = value < 0n;
  // ~value = -value - 1 turns a negative number into the magnitude its bytes invert.
  let hex = (negative ? ~value : value).toString(16);
  if (hex.length % 2 !== 0) hex = "0" + hex;
  if (parseInt(hex[0], 16) >= 8) hex = "00" + hex;
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    const byte = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
    bytes[i] = negative ? ~byte & 0xff : byte;
  }
  return bytes;
}

function bytesToBigint(bytes: Uint8Array): bigint {
  if (bytes.length === 0) throw new DecodeError("A bigint payload needs at least one byte");
  const hex = new Array<string>(bytes.length);
  for (let i = 0; i < bytes.length; i++) hex[i] = HEX[bytes[i]];
  const value = BigInt("0x" + hex.join(""));
  return bytes[0] & 0x80 ? value - (1n << BigInt(bytes.length * 8)) : value;
}
