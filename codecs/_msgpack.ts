/**
 * conduit's MessagePack writer and reader, which `codecs/msgpack.ts` wraps, and the payloads of
 * the extension types conduit gives meaning to.
 *
 * @module
 */

// The payloads of the MessagePack extension types conduit gives meaning to, apart from Map and
// Set (whose payloads are MessagePack documents): timestamps (type -1) and bigints (0x42).

/**
 * A MessagePack extension value: its type (-128 to 127; negative types are reserved by the
 * MessagePack spec) and its payload. The MessagePack codec decodes an extension type it gives no
 * meaning to as one, and encodes one back unchanged.
 *
 * @example An application's own extension type, through the codec and back
 * ```ts
 * import { ExtData, msgpackCodec } from "@conduit/ipc/codecs/msgpack";
 * import assert from "node:assert/strict";
 *
 * const codec = msgpackCodec();
 * const point = new ExtData(7, new Uint8Array([1, 2]));
 * const back = codec.decode(codec.encode({ point })) as { point: ExtData };
 * assert.ok(back.point instanceof ExtData);
 * assert.equal(back.point.type, 7);
 * assert.deepEqual([...back.point.data], [1, 2]);
 * ```
 */
export class ExtData {
  /** The extension type, an integer from -128 to 127. */
  readonly type: number;
  /** The payload. */
  readonly data: Uint8Array;

  /**
   * An extension value of `type` holding `data`.
   *
   * @param type The extension type, an integer from -128 to 127.
   * @param data The payload.
   */
  constructor(type: number, data: Uint8Array) {
    this.type = type;
    this.data = data;
  }
}

/**
 * The MessagePack timestamp payload (extension type -1) of `date`: 4 bytes (whole seconds from
 * 1970 up to 2106), 8 (with milliseconds, up to 2514) or 12 (any other instant), as the
 * MessagePack spec chooses them.
 */
export function encodeTimestamp(date: Date): Uint8Array {
  const ms = date.getTime();
  const seconds = Math.floor(ms / 1000);
  const nanoseconds = (ms - seconds * 1000) * 1_000_000;
  if (seconds >= 0 && seconds < 0x400000000) {
    if (nanoseconds === 0 && seconds < TWO_32) {
      const data = new Uint8Array(4);
      new DataView(data.buffer).setUint32(0, seconds);
      return data;
    }
    const data = new Uint8Array(8);
    const view = new DataView(data.buffer);
    // nanoseconds in the top 30 bits, seconds in the low 34.
    view.setUint32(0, nanoseconds * 4 + Math.floor(seconds / TWO_32));
    view.setUint32(4, seconds >>> 0);
    return data;
  }
  const data = new Uint8Array(12);
  const view = new DataView(data.buffer);
  view.setUint32(0, nanoseconds);
  view.setInt32(4, Math.floor(seconds / TWO_32));
  view.setUint32(8, seconds >>> 0);
  return data;
}

/** What decoding does with a timestamp that has a part finer than a millisecond. */
export type SubMillisecond = "error" | "truncate";

/** The largest magnitude of a `Date`'s time value, in milliseconds (ECMA-262 TimeClip). */
const MAX_DATE_MS = 8.64e15;
/** 2^32: the split of a 64-bit MessagePack int into two 32-bit words. */
export const TWO_32 = 4294967296;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/**
 * The `Date` a timestamp payload (4, 8 or 12 bytes) holds. A timestamp a `Date` cannot hold
 * exactly is a `RangeError` that names it: nanoseconds past 999999999, an instant outside
 * `Date`'s ±8.64e15 ms, or (with `subMillisecond: "error"`) a part finer than a millisecond,
 * which `"truncate"` rounds down to the millisecond instead.
 */
export function decodeTimestamp(data: Uint8Array, subMillisecond: SubMillisecond): Date {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let seconds: number;
  let nanoseconds: number;
  switch (data.length) {
    case 4:
      return new Date(view.getUint32(0) * 1000);
    case 8: {
      const high = view.getUint32(0);
      nanoseconds = high >>> 2;
      seconds = (high & 0x3) * TWO_32 + view.getUint32(4);
      break;
    }
    case 12:
      nanoseconds = view.getUint32(0);
      seconds = view.getInt32(4) * TWO_32 + view.getUint32(8);
      break;
    default:
      throw new TypeError(`A timestamp payload has 4, 8 or 12 bytes, not ${data.length}`);
  }
  const stated = () => `Timestamp ${seconds} s + ${nanoseconds} ns`;
  if (nanoseconds > 999_999_999) throw new RangeError(`${stated()}: nanoseconds past 999999999`);
  const subMs = nanoseconds % 1_000_000;
  if (subMs !== 0 && subMillisecond === "error") {
    throw new RangeError(
      `${stated()} has a part finer than a millisecond, which a Date cannot hold ` +
        `(decode with subMillisecond: "truncate" to drop it)`,
    );
  }
  const ms = seconds * 1000 + (nanoseconds - subMs) / 1_000_000;
  if (!(Math.abs(ms) <= MAX_DATE_MS)) {
    throw new RangeError(`${stated()} is outside the range of Date (±8.64e15 ms)`);
  }
  return new Date(ms);
}

/** A bigint as minimal big-endian two's complement bytes (at least one). */
export function bigintToBytes(value: bigint): Uint8Array {
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

/** The bigint of big-endian two's complement bytes. */
export function bytesToBigint(bytes: Uint8Array): bigint {
  if (bytes.length === 0) throw new TypeError("A bigint payload needs at least one byte");
  const hex = new Array<string>(bytes.length);
  for (let i = 0; i < bytes.length; i++) hex[i] = HEX[bytes[i]];
  const value = BigInt("0x" + hex.join(""));
  return bytes[0] & 0x80 ? value - (1n << BigInt(bytes.length * 8)) : value;
}

// A MessagePack writer that produces exactly the bytes of `@msgpack/msgpack`'s `Encoder`
// (pinned 3.1) with the options `codecs/msgpack.ts` uses (except that a string with a lone
// surrogate is an error rather than WTF-8 or U+FFFD), and faster: it writes
// bytes straight into its buffer instead of through a `DataView` call per byte, reserves room
// once per value, writes short ASCII strings in one pass, and skips the extension hook for
// plain objects and arrays (no extension applies to them). `_msgpack_test.ts` compares
// its output with the library's on generated values.
/** Turns a value that is no array, plain object or primitive into an extension, or null. */
export type ExtensionHook = (object: unknown) => ExtData | null;

/**
 * Records sent by shape (codecs/structured.ts, docs/protocol.md §14): a plain object of a shape is
 * the array `[mark, values…]`, its mark an extension value of type `type` holding the shape.
 */
export interface RecordHooks {
  /** The extension type of the marks. */
  readonly type: number;
  /** The writer's: the mark of the shape to write a plain object of these keys by, if any. */
  markOf?(keys: string[]): ExtData | undefined;
  /** The reader's: the keys of the shape of mark payload `data`; throws when there is none. */
  keysOf(data: Uint8Array): readonly string[];
}

/** The method of conduit's MessagePack codec that sets its writers' and readers' hooks. */
export const SET_RECORD_HOOKS: unique symbol = Symbol("setRecordHooks");

/** The first buffer size, as the library's. */
const INITIAL_BYTES = 2048;
/** Buffers grown past this serve one message and are dropped, not kept for good. */
const RETAINED_BYTES = 4 * 1024 * 1024;
/** Strings up to this many units are encoded by a JavaScript loop, longer ones by
 * `TextEncoder.encodeInto` (the library's threshold; lone surrogates are refused before). */
const TEXT_ENCODER_THRESHOLD = 50;
const FIXSTR_LIMIT = 32;
/** The most bytes one UTF-16 unit takes in UTF-8. */
const MAX_BYTES_PER_UNIT = 3;
const textEncoder = new TextEncoder();
const INT64_MIN = -(2n ** 63n);
const UINT64_MAX = 2n ** 64n - 1n;
const SAFE_BIGINT = BigInt(Number.MAX_SAFE_INTEGER);
const objectProto = Object.prototype;
const arrayProto = Array.prototype;

/** Encodes values into a buffer of its own; see the module doc. */
export class MsgpackWriter {
  readonly #extension: ExtensionHook;
  readonly #maxDepth: number;
  readonly #bigintAsInt: boolean;
  #bytes = new Uint8Array(INITIAL_BYTES);
  #view = new DataView(this.#bytes.buffer);
  #pos = 0;
  #entered = false;
  /** Set while an encode sends records by shape. */
  records: RecordHooks | undefined;

  /**
   * @param extension Called for every value that is not a plain object, an array or a
   * primitive the format has (bigints, class instances, typed arrays, symbols, functions).
   * @param maxDepth The deepest level a value may sit at, the top-level value being level 1.
   * @param bigintAsInt Whether a bigint that fits 64 bits is written as a plain int (then
   * the hook sees only larger ones).
   */
  constructor(extension: ExtensionHook, maxDepth: number, bigintAsInt = false) {
    this.#extension = extension;
    this.#maxDepth = maxDepth;
    this.#bigintAsInt = bigintAsInt;
  }

  /**
   * Encodes `value`. The bytes are a view of this writer's buffer, valid until its next
   * `encode`. Throws the library's errors for what it refuses (too deep, unrecognized objects).
   */
  encode(value: unknown): Uint8Array {
    // Re-entered from a getter or an extension hook while encoding: a writer of its own, as
    // the library clones its encoder.
    if (this.#entered) {
      return new MsgpackWriter(this.#extension, this.#maxDepth, this.#bigintAsInt).encode(value);
    }
    this.#entered = true;
    this.#pos = 0;
    try {
      this.#value(value, 1);
      const bytes = this.#bytes.subarray(0, this.#pos);
      if (this.#bytes.length > RETAINED_BYTES) this.#resize(INITIAL_BYTES, 0);
      return bytes;
    } finally {
      this.#entered = false;
    }
  }

  #value(value: unknown, depth: number): void {
    if (depth > this.#maxDepth) throw new Error(`Too deep objects in depth ${depth}`);
    if (value == null) {
      this.#ensure(1);
      this.#bytes[this.#pos++] = 0xc0;
      return;
    }
    switch (typeof value) {
      case "boolean":
        this.#ensure(1);
        this.#bytes[this.#pos++] = value ? 0xc3 : 0xc2;
        return;
      case "number":
        return this.#number(value);
      case "string":
        return this.#string(value);
      case "bigint":
        if (this.#bigintAsInt && value >= INT64_MIN && value <= UINT64_MAX) {
          return this.#bigint(value);
        }
        break;
      case "object": {
        // Plain objects and arrays are never Dates, Maps, Sets or ExtData, so the hook would
        // return null for them; `Array.isArray` keeps an `Object.create(Array.prototype)` a map.
        const proto = Object.getPrototypeOf(value);
        if (proto === objectProto) {
          const object = value as Record<string, unknown>;
          return this.records?.markOf === undefined
            ? this.#map(object, depth)
            : this.#record(object, depth);
        }
        if (proto === arrayProto && Array.isArray(value)) return this.#array(value, depth);
      }
    }
    this.#object(value, depth);
  }

  /** The library's `encodeObject`: the extension hook first, then the built-in kinds. */
  #object(value: unknown, depth: number): void {
    const ext = this.#extension(value);
    if (ext !== null) this.#ext(ext);
    else if (Array.isArray(value)) this.#array(value, depth);
    else if (ArrayBuffer.isView(value)) this.#binary(value);
    else if (typeof value === "object") this.#map(value as Record<string, unknown>, depth);
    else throw new Error(`Unrecognized object: ${Object.prototype.toString.apply(value)}`);
  }

  #number(n: number): void {
    this.#ensure(9);
    const b = this.#bytes;
    let p = this.#pos;
    if (Number.isSafeInteger(n)) {
      if (n >= 0) {
        if (n < 0x80) {
          b[p++] = n;
        } else if (n < 0x100) {
          b[p++] = 0xcc;
          b[p++] = n;
        } else if (n < 0x10000) {
          b[p++] = 0xcd;
          b[p++] = n >>> 8;
          b[p++] = n;
        } else if (n < 0x100000000) {
          b[p++] = 0xce;
          p = writeU32(b, p, n);
        } else {
          b[p++] = 0xcf;
          p = writeU32(b, writeU32(b, p, Math.floor(n / TWO_32)), n >>> 0);
        }
      } else if (n >= -0x20) {
        b[p++] = 0xe0 | (n + 0x20);
      } else if (n >= -0x80) {
        b[p++] = 0xd0;
        b[p++] = n; // a Uint8Array stores n mod 256: the two's complement byte
      } else if (n >= -0x8000) {
        b[p++] = 0xd1;
        b[p++] = n >> 8;
        b[p++] = n;
      } else if (n >= -0x80000000) {
        b[p++] = 0xd2;
        p = writeU32(b, p, n);
      } else {
        b[p++] = 0xd3;
        // Math.floor keeps the high word's sign (writeU32 writes its two's complement); `>>> 0`
        // is n mod 2^32 for negatives too.
        p = writeU32(b, writeU32(b, p, Math.floor(n / TWO_32)), n >>> 0);
      }
    } else {
      b[p++] = 0xcb;
      this.#view.setFloat64(p, n);
      p += 8;
    }
    this.#pos = p;
  }

  /** A bigint that fits 64 bits, in the smallest int form that holds it. */
  #bigint(n: bigint): void {
    if (n >= -SAFE_BIGINT && n <= SAFE_BIGINT) return this.#number(Number(n));
    this.#ensure(9);
    if (n >= 0n) {
      this.#bytes[this.#pos] = 0xcf;
      this.#view.setBigUint64(this.#pos + 1, n);
    } else {
      this.#bytes[this.#pos] = 0xd3;
      this.#view.setBigInt64(this.#pos + 1, n);
    }
    this.#pos += 9;
  }

  #string(s: string): void {
    const length = s.length;
    if (length < FIXSTR_LIMIT) {
      // Room for the general path too, so a non-ASCII unit can fall through to it.
      this.#ensure(5 + length * MAX_BYTES_PER_UNIT);
      const b = this.#bytes;
      const start = this.#pos;
      let p = start + 1;
      let i = 0;
      for (; i < length; i++) {
        const unit = s.charCodeAt(i);
        if (unit >= 0x80) break;
        b[p++] = unit;
      }
      if (i === length) {
        b[start] = 0xa0 + length;
        this.#pos = p;
        return;
      }
    }
    // A lone surrogate has no UTF-8 form: the library would write WTF-8 (short strings) or
    // U+FFFD (long ones), and conduit's reader refuses the former. One-byte strings, which
    // hold no surrogates, pass this check without a scan.
    if (!s.isWellFormed()) throw new TypeError(loneSurrogate(s));
    const byteLength = utf8Count(s);
    this.#ensure(5 + byteLength);
    this.#stringHeader(byteLength);
    if (length > TEXT_ENCODER_THRESHOLD) {
      textEncoder.encodeInto(s, this.#bytes.subarray(this.#pos));
    } else {
      utf8Encode(s, this.#bytes, this.#pos);
    }
    this.#pos += byteLength;
  }

  #stringHeader(byteLength: number): void {
    if (byteLength < FIXSTR_LIMIT) this.#head(0xa0 + byteLength, 0, 0);
    else if (byteLength < 0x100) this.#head(0xd9, 1, byteLength);
    else if (byteLength < 0x10000) this.#head(0xda, 2, byteLength);
    else if (byteLength < 0x100000000) this.#head(0xdb, 4, byteLength);
    else throw new Error(`Too long string: ${byteLength} bytes in UTF-8`);
  }

  #array(array: unknown[], depth: number): void {
    const size = array.length;
    if (size < 16) this.#head(0x90 + size, 0, 0);
    else if (size < 0x10000) this.#head(0xdc, 2, size);
    else if (size < 0x100000000) this.#head(0xdd, 4, size);
    else throw new Error(`Too large array: ${size}`);
    for (const item of array) this.#value(item, depth + 1);
  }

  /** A plain object: `[mark, values…]` when its keys have a shape, else a map. */
  #record(object: Record<string, unknown>, depth: number): void {
    const keys = Object.keys(object);
    const mark = keys.length === 0 ? undefined : this.records!.markOf!(keys);
    if (mark === undefined) return this.#mapOf(object, keys, depth);
    const size = keys.length + 1;
    if (size < 16) this.#head(0x90 + size, 0, 0);
    else if (size < 0x10000) this.#head(0xdc, 2, size);
    else this.#head(0xdd, 4, size);
    this.#ext(mark);
    for (let i = 0; i < keys.length; i++) this.#value(object[keys[i]], depth + 1);
  }

  #map(object: Record<string, unknown>, depth: number): void {
    this.#mapOf(object, Object.keys(object), depth);
  }

  #mapOf(object: Record<string, unknown>, keys: string[], depth: number): void {
    const size = keys.length;
    if (size < 16) this.#head(0x80 + size, 0, 0);
    else if (size < 0x10000) this.#head(0xde, 2, size);
    else if (size < 0x100000000) this.#head(0xdf, 4, size);
    else throw new Error(`Too large map object: ${size}`);
    for (const key of keys) {
      this.#string(key);
      this.#value(object[key], depth + 1);
    }
  }

  #binary(view: ArrayBufferView): void {
    const size = view.byteLength;
    if (size < 0x100) this.#head(0xc4, 1, size);
    else if (size < 0x10000) this.#head(0xc5, 2, size);
    else if (size < 0x100000000) this.#head(0xc6, 4, size);
    else throw new Error(`Too large binary: ${size}`);
    this.#raw(
      view instanceof Uint8Array
        ? view
        : new Uint8Array(view.buffer, view.byteOffset, view.byteLength),
    );
  }

  #ext(ext: ExtData): void {
    const data = ext.data;
    const size = data.length;
    if (size === 1) this.#head(0xd4, 0, 0);
    else if (size === 2) this.#head(0xd5, 0, 0);
    else if (size === 4) this.#head(0xd6, 0, 0);
    else if (size === 8) this.#head(0xd7, 0, 0);
    else if (size === 16) this.#head(0xd8, 0, 0);
    else if (size < 0x100) this.#head(0xc7, 1, size);
    else if (size < 0x10000) this.#head(0xc8, 2, size);
    else if (size < 0x100000000) this.#head(0xc9, 4, size);
    else throw new Error(`Too large extension object: ${size}`);
    this.#extType(ext.type);
    this.#raw(data);
  }

  #extType(type: number): void {
    this.#ensure(1);
    this.#bytes[this.#pos++] = type; // stored mod 256, as DataView.setInt8 stores it
  }

  /** Writes a type byte and a big-endian length of `width` bytes (0: none). */
  #head(type: number, width: 0 | 1 | 2 | 4, length: number): void {
    this.#ensure(5);
    const b = this.#bytes;
    let p = this.#pos;
    b[p++] = type;
    if (width === 1) {
      b[p++] = length;
    } else if (width === 2) {
      b[p++] = length >>> 8;
      b[p++] = length;
    } else if (width === 4) {
      p = writeU32(b, p, length);
    }
    this.#pos = p;
  }

  #raw(data: Uint8Array): void {
    this.#ensure(data.length);
    this.#bytes.set(data, this.#pos);
    this.#pos += data.length;
  }

  #ensure(size: number): void {
    const required = this.#pos + size;
    if (required > this.#bytes.length) this.#resize(required * 2, this.#pos);
  }

  #resize(size: number, keep: number): void {
    const bytes = new Uint8Array(size);
    bytes.set(this.#bytes.subarray(0, keep));
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer);
  }
}

function loneSurrogate(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const unit = s.charCodeAt(i);
    const high = unit >= 0xd800 && unit <= 0xdbff;
    if (high && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
    else if (high || (unit >= 0xdc00 && unit <= 0xdfff)) {
      return `String with a lone surrogate (U+${unit.toString(16).toUpperCase()}) at index ${i}: ` +
        `it has no UTF-8 form`;
    }
  }
  return "String with a lone surrogate";
}

function writeU32(b: Uint8Array, p: number, n: number): number {
  b[p] = n >>> 24;
  b[p + 1] = n >>> 16;
  b[p + 2] = n >>> 8;
  b[p + 3] = n;
  return p + 4;
}

/** How many bytes well-formed `s` takes in UTF-8. */
function utf8Count(s: string): number {
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const unit = s.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      bytes += 4; // a high surrogate and its low one (the string is well formed)
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** Writes well-formed `s` as UTF-8 into `out` from `at`, which has room for it. */
function utf8Encode(s: string, out: Uint8Array, at: number): void {
  for (let i = 0; i < s.length; i++) {
    let point = s.charCodeAt(i);
    if (point < 0x80) {
      out[at++] = point;
      continue;
    }
    if (point < 0x800) {
      out[at++] = 0xc0 | (point >> 6);
    } else {
      if (point >= 0xd800 && point <= 0xdbff) {
        point = 0x10000 + ((point - 0xd800) << 10) + (s.charCodeAt(++i) - 0xdc00);
        out[at++] = 0xf0 | (point >> 18);
        out[at++] = 0x80 | ((point >> 12) & 0x3f);
      } else {
        out[at++] = 0xe0 | (point >> 12);
      }
      out[at++] = 0x80 | ((point >> 6) & 0x3f);
    }
    out[at++] = 0x80 | (point & 0x3f);
  }
}

// conduit's MessagePack decoder: a recursive reader over one message that gives every value
// or a verdict of its own, with the rules `codecs/msgpack.ts` documents: integers outside the
// safe range as `bigint`, maps with a key that is no string as `Map`, strings checked as UTF-8,
// `"__proto__"` keys kept as data, and every length limit and the depth limit checked from a
// header before anything is allocated. Its errors are `RangeError`s (input cut short, a limit
// passed) and `TypeError`s (malformed input); the codec wraps them in a `CodecError`.
//
// The time of a decode goes to strings and map keys: short ASCII strings are built in one
// pass, other strings up to `JS_UTF8_MAX_BYTES` bytes by a validating decoder here,
// longer ones by a fatal `TextDecoder`, and map keys are looked up in a small cache so that the
// same key bytes give the same string (V8 assigns a property by a string it has seen faster).
/** The decoder's length limits, all in bytes or items. */
export interface ReaderLimits {
  maxStrLength: number;
  maxBinLength: number;
  maxArrayLength: number;
  maxMapLength: number;
  maxExtLength: number;
}

/** Everything a reader is told. */
export interface ReaderOptions extends ReaderLimits {
  /** The deepest level a value may sit at, the top-level value being level 1. */
  maxDepth: number;
  /** Whether invalid UTF-8 becomes U+FFFD (as `TextDecoder` replaces it) instead of an error. */
  lenientUtf8: boolean;
}

/** Decodes an extension payload (a view of the input) of the given type. */
export type ExtensionDecoder = (data: Uint8Array, type: number) => unknown;

/** Strings up to this many bytes are checked for ASCII and built here. */
const ASCII_FAST_BYTES = 64;
/** Non-ASCII strings up to this many bytes are decoded here; a `TextDecoder` call costs more. */
export const JS_UTF8_MAX_BYTES = 200;
/** Map keys up to this many bytes go through the key cache. */
const KEY_CACHE_BYTES = 16;
/** Cached keys per byte length; a full slot list replaces one at random. */
const KEYS_PER_LENGTH = 16;
const EMPTY = new Uint8Array(0);
/** 2^21: a 64-bit integer whose high word reaches it (or -2^21 with a zero low word, -2^53)
 * is outside the safe range. */
const SAFE_HIGH = 0x200000;
const fromCharCode = String.fromCharCode;
/** V8's `ConsString::kMinLength`: shorter concatenations are copied into flat strings. */
const CONS_STRING_MIN_LENGTH = 13;
const fatalDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const lenientDecoder = new TextDecoder("utf-8", { ignoreBOM: true });

/** Decodes one MessagePack value per {@linkcode MsgpackReader.read}; see the module doc. Not
 * re-entrant: a nested payload needs a reader of its own. */
export class MsgpackReader {
  readonly #options: ReaderOptions;
  readonly #extension: ExtensionDecoder;
  readonly #keys = new KeyCache();
  #bytes: Uint8Array = EMPTY;
  /** Made on the first float of a message: a DataView per message costs as much as a key. */
  #view: DataView | undefined;
  #pos = 0;
  /** Set when records sent by shape are read. */
  records: RecordHooks | undefined;

  /**
   * @param options Limits, and how to treat invalid UTF-8.
   * @param extension Decodes extension payloads; what it throws is the verdict.
   */
  constructor(options: ReaderOptions, extension: ExtensionDecoder) {
    this.#options = options;
    this.#extension = extension;
  }

  /** The one value `bytes` holds. Binary values and unknown extensions are views of `bytes`. */
  read(bytes: Uint8Array): unknown {
    this.#bytes = bytes;
    this.#pos = 0;
    try {
      const value = this.#value(1);
      if (this.#pos !== bytes.length) {
        throw new TypeError(
          `${bytes.length - this.#pos} byte(s) follow the value, which ends at byte ${this.#pos}`,
        );
      }
      return value;
    } finally {
      // Not to keep a large input alive until the next read.
      this.#bytes = EMPTY;
      this.#view = undefined;
    }
  }

  #value(depth: number): unknown {
    const b = this.#bytes;
    const pos = this.#pos;
    if (pos >= b.length) throw this.#truncated();
    const head = b[pos];
    this.#pos = pos + 1;
    if (head < 0x80) return head;
    if (head < 0x90) return this.#map(head - 0x80, depth);
    if (head < 0xa0) return this.#array(head - 0x90, depth);
    if (head < 0xc0) return this.#string(head - 0xa0);
    if (head >= 0xe0) return head - 0x100;
    switch (head) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
        return this.#binary(this.#length(1));
      case 0xc5:
        return this.#binary(this.#length(2));
      case 0xc6:
        return this.#binary(this.#length(4));
      case 0xc7:
        return this.#ext(this.#length(1));
      case 0xc8:
        return this.#ext(this.#length(2));
      case 0xc9:
        return this.#ext(this.#length(4));
      case 0xca:
        return this.#dataView().getFloat32(this.#advance(4));
      case 0xcb:
        return this.#dataView().getFloat64(this.#advance(8));
      case 0xcc:
        return this.#length(1);
      case 0xcd:
        return this.#length(2);
      case 0xce:
        return this.#length(4);
      case 0xcf: {
        const p = this.#advance(8);
        const high = int32(b, p) >>> 0;
        const low = int32(b, p + 4) >>> 0;
        return high < SAFE_HIGH ? high * TWO_32 + low : (BigInt(high) << 32n) | BigInt(low);
      }
      case 0xd0:
        return (b[this.#advance(1)] << 24) >> 24;
      case 0xd1: {
        const p = this.#advance(2);
        return (((b[p] << 8) | b[p + 1]) << 16) >> 16;
      }
      case 0xd2:
        return int32(b, this.#advance(4));
      case 0xd3: {
        const p = this.#advance(8);
        const high = int32(b, p);
        const low = int32(b, p + 4) >>> 0;
        if (high < SAFE_HIGH && (high > -SAFE_HIGH || (high === -SAFE_HIGH && low !== 0))) {
          return high * TWO_32 + low;
        }
        return (BigInt(high) << 32n) | BigInt(low);
      }
      case 0xd4:
        return this.#ext(1);
      case 0xd5:
        return this.#ext(2);
      case 0xd6:
        return this.#ext(4);
      case 0xd7:
        return this.#ext(8);
      case 0xd8:
        return this.#ext(16);
      case 0xd9:
        return this.#string(this.#length(1));
      case 0xda:
        return this.#string(this.#length(2));
      case 0xdb:
        return this.#string(this.#length(4));
      case 0xdc:
        return this.#array(this.#length(2), depth);
      case 0xdd:
        return this.#array(this.#length(4), depth);
      case 0xde:
        return this.#map(this.#length(2), depth);
      case 0xdf:
        return this.#map(this.#length(4), depth);
      default:
        throw new TypeError(`Byte 0xc1 at byte ${pos} is never used in MessagePack`);
    }
  }

  /** Reads a big-endian unsigned integer of `width` bytes. */
  #length(width: 1 | 2 | 4): number {
    const b = this.#bytes;
    const p = this.#advance(width);
    if (width === 1) return b[p];
    if (width === 2) return (b[p] << 8) | b[p + 1];
    return int32(b, p) >>> 0;
  }

  #dataView(): DataView {
    const b = this.#bytes;
    return this.#view ??= new DataView(b.buffer, b.byteOffset, b.byteLength);
  }

  /** Moves past `size` bytes that must all be there; returns where they start. */
  #advance(size: number): number {
    const start = this.#pos;
    if (start + size > this.#bytes.length) throw this.#truncated();
    this.#pos = start + size;
    return start;
  }

  #truncated(): RangeError {
    return new RangeError(`Input of ${this.#bytes.length} byte(s) ends inside a value`);
  }

  /** Checks a container of `size` items (each at least `minBytes` long) at level `depth`. */
  #container(size: number, minBytes: number, depth: number, what: string, limit: number): void {
    if (size > limit) {
      const name = what === "Array" ? "maxArrayLength" : "maxMapLength";
      throw new RangeError(`${what} of ${size} items exceeds ${name} (${limit})`);
    }
    if (size * minBytes > this.#bytes.length - this.#pos) throw this.#truncated();
    if (size > 0 && depth >= this.#options.maxDepth) {
      throw new RangeError(`Value nests deeper than maxDepth (${this.#options.maxDepth})`);
    }
  }

  #array(size: number, depth: number): unknown {
    this.#container(size, 1, depth, "Array", this.#options.maxArrayLength);
    const records = this.records;
    if (records !== undefined && size > 0) {
      // `[mark, values…]`: the mark is a fixext 1 or 2 of the records' type.
      const b = this.#bytes;
      const p = this.#pos;
      const head = b[p];
      if ((head === 0xd4 || head === 0xd5) && b[p + 1] === records.type) {
        return this.#record(records, head === 0xd4 ? 1 : 2, size - 1, depth);
      }
    }
    const array = new Array(size);
    for (let i = 0; i < size; i++) array[i] = this.#value(depth + 1);
    return array;
  }

  #record(
    records: RecordHooks,
    idBytes: number,
    values: number,
    depth: number,
  ): Record<string, unknown> {
    const start = this.#advance(2 + idBytes) + 2;
    const keys = records.keysOf(this.#bytes.subarray(start, start + idBytes));
    if (keys.length !== values) {
      throw new TypeError(`A record has ${values} values for the ${keys.length} keys of its shape`);
    }
    const object: Record<string, unknown> = {};
    for (let i = 0; i < values; i++) {
      const key = keys[i];
      const value = this.#value(depth + 1);
      if (key === "__proto__") defineData(object, key, value);
      else object[key] = value;
    }
    return object;
  }

  #map(size: number, depth: number): Record<string, unknown> | Map<unknown, unknown> {
    this.#container(size, 2, depth, "Map", this.#options.maxMapLength);
    const start = this.#pos;
    const object: Record<string, unknown> = {};
    for (let i = 0; i < size; i++) {
      const key = this.#key(depth);
      if (typeof key !== "string") return this.#mapOfAnyKeys(object, start, i, size, depth);
      const value = this.#value(depth + 1);
      if (key === "__proto__") defineData(object, key, value);
      else object[key] = value;
    }
    return object;
  }

  /**
   * Turns the map being read into a `Map` at its first key that is no string (entry `at`).
   * The entries before it are taken from `object` in wire order, which an object does not
   * keep (integer-like keys come first): their keys are read again and their values skipped,
   * not decoded again, so that maps nested in such maps cost linear time, not 2^depth.
   */
  #mapOfAnyKeys(
    object: Record<string, unknown>,
    start: number,
    at: number,
    size: number,
    depth: number,
  ): Map<unknown, unknown> {
    this.#pos = start;
    const map = new Map<unknown, unknown>();
    for (let i = 0; i < at; i++) {
      const key = this.#key(depth) as string;
      this.#skip();
      map.set(key, object[key]);
    }
    for (let i = at; i < size; i++) {
      const key = this.#value(depth + 1);
      map.set(key, this.#value(depth + 1));
    }
    return map;
  }

  /** Moves past one value already read once (so well-formed), without building it. */
  #skip(): void {
    const b = this.#bytes;
    for (let pending = 1; pending > 0; pending--) {
      const head = b[this.#advance(1)];
      if (head < 0x80 || head >= 0xe0) continue;
      if (head < 0x90) pending += 2 * (head - 0x80);
      else if (head < 0xa0) pending += head - 0x90;
      else if (head < 0xc0) this.#advance(head - 0xa0);
      else if (head >= 0xd4 && head <= 0xd8) this.#advance(1 + (1 << (head - 0xd4)));
      else {
        switch (head) {
          case 0xc4:
          case 0xd9:
            this.#advance(this.#length(1));
            break;
          case 0xc5:
          case 0xda:
            this.#advance(this.#length(2));
            break;
          case 0xc6:
          case 0xdb:
            this.#advance(this.#length(4));
            break;
          case 0xc7:
            this.#advance(1 + this.#length(1));
            break;
          case 0xc8:
            this.#advance(1 + this.#length(2));
            break;
          case 0xc9:
            this.#advance(1 + this.#length(4));
            break;
          case 0xca:
          case 0xce:
          case 0xd2:
            this.#advance(4);
            break;
          case 0xcb:
          case 0xcf:
          case 0xd3:
            this.#advance(8);
            break;
          case 0xcc:
          case 0xd0:
            this.#advance(1);
            break;
          case 0xcd:
          case 0xd1:
            this.#advance(2);
            break;
          case 0xdc:
            pending += this.#length(2);
            break;
          case 0xdd:
            pending += this.#length(4);
            break;
          case 0xde:
            pending += 2 * this.#length(2);
            break;
          case 0xdf:
            pending += 2 * this.#length(4);
            break;
          default: // nil, false, true (0xc1 cannot occur in a value read once)
            break;
        }
      }
    }
  }

  /** A map key: short strings through the key cache, anything else as a value. */
  #key(depth: number): unknown {
    const b = this.#bytes;
    const pos = this.#pos;
    const head = b[pos];
    let byteLength: number;
    let start = pos + 1;
    if (head >= 0xa0 && head < 0xc0) {
      byteLength = head - 0xa0;
    } else if (head === 0xd9 && pos + 1 < b.length) {
      byteLength = b[pos + 1];
      start = pos + 2;
    } else {
      return this.#value(depth + 1);
    }
    if (byteLength === 0 || byteLength > KEY_CACHE_BYTES) return this.#value(depth + 1);
    if (byteLength > this.#options.maxStrLength) return this.#value(depth + 1); // the error
    if (start + byteLength > b.length) throw this.#truncated();
    this.#pos = start + byteLength;
    return this.#keys.find(b, start, byteLength) ??
      this.#keys.store(b, start, byteLength, this.#text(start, byteLength));
  }

  #string(byteLength: number): string {
    const max = this.#options.maxStrLength;
    if (byteLength > max) {
      throw new RangeError(`String of ${byteLength} bytes exceeds maxStrLength (${max})`);
    }
    return this.#text(this.#advance(byteLength), byteLength);
  }

  #text(start: number, byteLength: number): string {
    const b = this.#bytes;
    if (byteLength <= ASCII_FAST_BYTES) {
      const ascii = asciiString(b, start, byteLength);
      if (ascii !== undefined) return ascii;
    }
    const bytes = b.subarray(start, start + byteLength);
    if (this.#options.lenientUtf8) return lenientDecoder.decode(bytes);
    if (byteLength <= JS_UTF8_MAX_BYTES) return utf8Strict(b, start, byteLength);
    try {
      return fatalDecoder.decode(bytes);
    } catch {
      return utf8Strict(b, start, byteLength); // throws, naming the byte
    }
  }

  #binary(size: number): Uint8Array {
    const max = this.#options.maxBinLength;
    if (size > max) throw new RangeError(`Binary of ${size} bytes exceeds maxBinLength (${max})`);
    const start = this.#advance(size);
    return this.#bytes.subarray(start, start + size);
  }

  #ext(size: number): unknown {
    const max = this.#options.maxExtLength;
    if (size > max) {
      throw new RangeError(`Extension payload of ${size} bytes exceeds maxExtLength (${max})`);
    }
    const typeAt = this.#advance(1);
    const start = this.#advance(size);
    const type = (this.#bytes[typeAt] << 24) >> 24;
    return this.#extension(this.#bytes.subarray(start, start + size), type);
  }
}

/** Defines `key` as an own data property, so that `"__proto__"` never sets a prototype. */
function defineData(object: object, key: string, value: unknown): void {
  Object.defineProperty(object, key, {
    value,
    writable: true,
    enumerable: true,
    configurable: true,
  });
}

/** Remembers the strings of short map keys by their bytes. */
class KeyCache {
  /** Index n - 1 holds the keys of n bytes, each as its bytes and its string. */
  readonly #slots: Array<Array<{ bytes: Uint8Array; text: string }>> = Array.from(
    { length: KEY_CACHE_BYTES },
    () => [],
  );

  find(b: Uint8Array, start: number, length: number): string | undefined {
    const slot = this.#slots[length - 1];
    search: for (let k = 0; k < slot.length; k++) {
      const entry = slot[k];
      const bytes = entry.bytes;
      for (let i = 0; i < length; i++) if (bytes[i] !== b[start + i]) continue search;
      return entry.text;
    }
    return undefined;
  }

  store(b: Uint8Array, start: number, length: number, text: string): string {
    const slot = this.#slots[length - 1];
    const entry = { bytes: b.slice(start, start + length), text };
    if (slot.length < KEYS_PER_LENGTH) slot.push(entry);
    else slot[(Math.random() * KEYS_PER_LENGTH) | 0] = entry;
    return text;
  }
}

/** The big-endian signed 32-bit integer at `p`. */
function int32(b: Uint8Array, p: number): number {
  return (b[p] << 24) | (b[p + 1] << 16) | (b[p + 2] << 8) | b[p + 3];
}

/**
 * The string of well-formed UTF-8 bytes (no overlong forms, no surrogates, nothing past
 * U+10FFFF, nothing cut short); anything else is a `TypeError` that names the byte.
 */
export function utf8Strict(b: Uint8Array, start: number, length: number): string {
  const end = start + length;
  const units: number[] = [];
  let i = start;
  while (i < end) {
    const lead = b[i];
    if (lead < 0x80) {
      units.push(lead);
      i++;
      continue;
    }
    let more: number;
    let code: number;
    let min: number;
    if (lead >= 0xc2 && lead <= 0xdf) {
      more = 1;
      code = lead & 0x1f;
      min = 0x80;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      more = 2;
      code = lead & 0x0f;
      min = 0x800;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      more = 3;
      code = lead & 0x07;
      min = 0x10000;
    } else {
      throw invalidUtf8(i);
    }
    if (i + more >= end) throw invalidUtf8(i);
    for (let k = 1; k <= more; k++) {
      const next = b[i + k];
      if ((next & 0xc0) !== 0x80) throw invalidUtf8(i);
      code = (code << 6) | (next & 0x3f);
    }
    if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      throw invalidUtf8(i);
    }
    if (code >= 0x10000) {
      code -= 0x10000;
      units.push(0xd800 | (code >> 10), 0xdc00 | (code & 0x3ff));
    } else {
      units.push(code);
    }
    i += more + 1;
  }
  return fromCharCode.apply(null, units);
}

function invalidUtf8(at: number): TypeError {
  return new TypeError(`Invalid UTF-8 in a string at byte ${at}`);
}

/** The bytes as a string if they are all ASCII, else `undefined`. */
function asciiString(b: Uint8Array, start: number, length: number): string | undefined {
  const end = start + length;
  for (let i = start; i < end; i++) if (b[i] >= 0x80) return undefined;
  switch (length) {
    case 0:
      return "";
    case 1:
      return fromCharCode(b[start]);
    case 2:
      return fromCharCode(b[start], b[start + 1]);
    case 3:
      return fromCharCode(b[start], b[start + 1], b[start + 2]);
    case 4:
      return fromCharCode(b[start], b[start + 1], b[start + 2], b[start + 3]);
    default: {
      // Concatenation is fastest for short strings, but from 13 characters on V8 makes it a
      // rope that every later use has to flatten; one fromCharCode call gives a flat string.
      if (length > CONS_STRING_MIN_LENGTH - 1) {
        return fromCharCode.apply(null, b.subarray(start, end) as unknown as number[]);
      }
      let s = "";
      for (let i = start; i < end; i++) s += fromCharCode(b[i]);
      return s;
    }
  }
}
