/**
 * conduit's MessagePack writer, {@linkcode MsgpackWriter}, which `codecs/msgpack.ts` wraps.
 *
 * @module
 */

import { type ExtData, type RecordHooks, TWO_32 } from "./_msgpack_ext.ts";

// A MessagePack writer that produces exactly the bytes of `@msgpack/msgpack`'s `Encoder`
// (pinned 3.1) with the options `codecs/msgpack.ts` uses (except that a string with a lone
// surrogate is an error rather than WTF-8 or U+FFFD), and faster: it writes
// bytes straight into its buffer instead of through a `DataView` call per byte, reserves room
// once per value, writes short ASCII strings in one pass, and skips the extension hook for
// plain objects and arrays (no extension applies to them). `_msgpack_writer_test.ts` compares
// its output with the library's on generated values.
/** Turns a value that is no array, plain object or primitive into an extension, or null. */
export type ExtensionHook = (object: unknown) => ExtData | null;

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
const uint8ArrayProto = Uint8Array.prototype;
const dateProto = Date.prototype;

/** What an encode as it is throws at a value that cannot go as it is; caught by encodeAsIs. */
const NOT_AS_IS = Symbol("not as it is");

/** Encodes values into a buffer of its own; see the module doc. */
export class MsgpackWriter {
  readonly #extension: ExtensionHook;
  readonly #maxDepth: number;
  readonly #bigintAsInt: boolean;
  #bytes = new Uint8Array(INITIAL_BYTES);
  #view = new DataView(this.#bytes.buffer);
  #pos = 0;
  #entered = false;
  /** Set during encodeAsIs: what is not written as it is throws NOT_AS_IS. */
  #asIs = false;
  /** The deepest level allowed: maxDepth, or encodeAsIs's own limit during it. */
  #depthLimit: number;
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
    this.#depthLimit = maxDepth;
    this.#bigintAsInt = bigintAsInt;
  }

  /**
   * Encodes `value` if every part of it is written as it is: JSON's values (no `undefined`, no
   * -0), bigints, `Uint8Array`s and valid `Date`s (their exact classes), plain objects without
   * symbol keys, arrays without holes, well-formed strings, at most `maxDepth` levels deep.
   * Returns `undefined` at anything else (a Map, a class instance, an error…) or any failure,
   * having written nothing the caller keeps: the structured codec's fast path, which then takes
   * its careful one. The bytes are those of {@linkcode encode}, valid until the next encode.
   */
  encodeAsIs(value: unknown, maxDepth: number): Uint8Array | undefined {
    if (this.#entered) return undefined;
    this.#asIs = true;
    this.#depthLimit = Math.min(maxDepth, this.#maxDepth);
    try {
      return this.encode(value);
    } catch {
      return undefined;
    } finally {
      this.#asIs = false;
      this.#depthLimit = this.#maxDepth;
    }
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
    if (depth > this.#depthLimit) throw new Error(`Too deep objects in depth ${depth}`);
    if (value == null) {
      if (value === undefined && this.#asIs) throw NOT_AS_IS;
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
        if (value === 0 && this.#asIs && 1 / value < 0) throw NOT_AS_IS;
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
        // A null-prototype object is a record too (the structured codec's `[ext N, record]`
        // goes by shape), but not as it is: the structured codec must mark it.
        const proto = Object.getPrototypeOf(value);
        if (proto === objectProto || (proto === null && !this.#asIs)) {
          const object = value as Record<string, unknown>;
          if (this.#asIs && Object.getOwnPropertySymbols(object).length > 0) throw NOT_AS_IS;
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
    if (this.#asIs && typeof value !== "bigint") {
      const proto = Object.getPrototypeOf(value);
      if (proto !== uint8ArrayProto && proto !== dateProto) throw NOT_AS_IS;
    }
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
    // Sent by shape, the keys are not written here: what #string refuses is refused first (the
    // careful path's values were checked as they were prepared).
    if (this.#asIs) {
      for (const key of keys) if (!key.isWellFormed()) throw new TypeError(loneSurrogate(key));
    }
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
