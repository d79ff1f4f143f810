/**
 * A fast path for decoding MessagePack: a recursive reader that gives the very values
 * `@msgpack/msgpack`'s `Decoder` (pinned 3.1) gives with the options `codecs/msgpack.ts` uses,
 * for input it fully understands, and otherwise returns {@linkcode FALLBACK} without a verdict,
 * so that the caller decodes with the library, which gives the value or the error. Input is
 * left to the library when it is malformed, truncated, past a length limit, nested deeper
 * than {@linkcode MAX_FAST_DEPTH}, or has a `"__proto__"` key or a key that is no string or
 * number. An extension decoder may throw `FALLBACK` too, to hand the whole message over.
 * Any other error an extension decoder throws is the verdict: the library reads the same
 * bytes in the same order, so it would reach the same call and get the same error.
 *
 * The library spends most of a decode in its string routines and its explicit stack; this
 * reader decodes short ASCII strings in one pass, leaves the rest to the library's own UTF-8
 * routine (so strings come out identical, invalid UTF-8 included), and recurses instead of
 * keeping a stack. `_msgpack_reader_test.ts` compares its output with the library's, on
 * generated values and on random bytes.
 *
 * @module
 */

import { utf8Decode } from "@msgpack/msgpack/dist.esm/utils/utf8.mjs";

/** Returned by {@linkcode MsgpackReader.read} when the library must decide. */
export const FALLBACK: unique symbol = Symbol("msgpack fallback");

/** Containers nested deeper than this go to the library, whose decoder keeps no call stack. */
export const MAX_FAST_DEPTH = 256;

/** The library's decoding limits, all in bytes or items. */
export interface ReaderLimits {
  maxStrLength: number;
  maxBinLength: number;
  maxArrayLength: number;
  maxMapLength: number;
  maxExtLength: number;
}

/** Decodes an extension payload, as the library's extension codec does. */
export type ExtensionDecoder = (data: Uint8Array, type: number) => unknown;

/** The library's `KeyDecoder`: map keys whose length it can cache are decoded through it. */
export interface KeyDecoder {
  canBeCached(byteLength: number): boolean;
  decode(bytes: Uint8Array, offset: number, byteLength: number): string;
}

/** Strings up to this many bytes are checked for ASCII and built here. */
const ASCII_FAST_BYTES = 64;
const EMPTY = new Uint8Array(0);
const TWO_32 = 4294967296;
const fromCharCode = String.fromCharCode;
/** V8's `ConsString::kMinLength`: shorter concatenations are copied into flat strings. */
const CONS_STRING_MIN_LENGTH = 13;

/** Decodes one MessagePack value, or gives up; see the module doc. Not re-entrant. */
export class MsgpackReader {
  readonly #limits: ReaderLimits;
  readonly #extension: ExtensionDecoder;
  readonly #keys: KeyDecoder;
  #bytes: Uint8Array = EMPTY;
  /** Made on the first float of a message: a DataView per message costs as much as a key. */
  #view: DataView | undefined;
  #pos = 0;

  /**
   * @param limits The library decoder's length limits: input past one goes to the library.
   * @param extension Decodes extension payloads; it may throw `FALLBACK`.
   * @param keys Decodes map keys as the library's decoder is told to. Reusing its strings
   * matters: assigning a property by a string V8 has not seen before costs a string-table
   * lookup, and a fresh string per key made decoding slower than the library's.
   */
  constructor(limits: ReaderLimits, extension: ExtensionDecoder, keys: KeyDecoder) {
    this.#limits = limits;
    this.#extension = extension;
    this.#keys = keys;
  }

  /** The value `bytes` holds, or {@linkcode FALLBACK}. Binary values are views of `bytes`. */
  read(bytes: Uint8Array): unknown {
    this.#bytes = bytes;
    this.#pos = 0;
    try {
      const value = this.#value(0);
      return this.#pos === bytes.length ? value : FALLBACK;
    } catch (err) {
      if (err === FALLBACK) return FALLBACK;
      throw err;
    } finally {
      // Not to keep a large input alive until the next read.
      this.#bytes = EMPTY;
      this.#view = undefined;
    }
  }

  #value(depth: number): unknown {
    const b = this.#bytes;
    const pos = this.#pos;
    if (pos >= b.length) throw FALLBACK;
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
        // As the library's getUint64 and getInt64: high word * 2^32 + low word.
        const p = this.#advance(8);
        return (int32(b, p) >>> 0) * TWO_32 + (int32(b, p + 4) >>> 0);
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
        return int32(b, p) * TWO_32 + (int32(b, p + 4) >>> 0);
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
        throw FALLBACK; // 0xc1, never used
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
    if (start + size > this.#bytes.length) throw FALLBACK;
    this.#pos = start + size;
    return start;
  }

  #array(size: number, depth: number): unknown[] {
    if (size > this.#limits.maxArrayLength || depth >= MAX_FAST_DEPTH) throw FALLBACK;
    // Every item takes a byte at least: a larger count is truncated input.
    if (size > this.#bytes.length - this.#pos) throw FALLBACK;
    const array = new Array(size);
    for (let i = 0; i < size; i++) array[i] = this.#value(depth + 1);
    return array;
  }

  #map(size: number, depth: number): Record<string, unknown> {
    if (size > this.#limits.maxMapLength || depth >= MAX_FAST_DEPTH) throw FALLBACK;
    if (size * 2 > this.#bytes.length - this.#pos) throw FALLBACK;
    const map: Record<string, unknown> = {};
    for (let i = 0; i < size; i++) {
      const key = this.#key(depth);
      // The library refuses "__proto__" and keys of other types, or (this codec) defines
      // "__proto__" as an own property: the library's path decides both.
      if ((typeof key !== "string" && typeof key !== "number") || key === "__proto__") {
        throw FALLBACK;
      }
      map[key] = this.#value(depth + 1);
    }
    return map;
  }

  /** A map key: a string through the key decoder when it can cache it, else any value. */
  #key(depth: number): unknown {
    const b = this.#bytes;
    const head = b[this.#pos];
    let byteLength = -1;
    let headerLength = 1;
    if (head >= 0xa0 && head < 0xc0) {
      byteLength = head - 0xa0;
    } else if (head === 0xd9) {
      byteLength = b[this.#pos + 1];
      headerLength = 2;
    }
    // A str 8 header cut short reads `undefined`: left to #value, which gives up.
    if (byteLength === undefined || byteLength < 0 || !this.#keys.canBeCached(byteLength)) {
      return this.#value(depth + 1);
    }
    if (byteLength > this.#limits.maxStrLength) throw FALLBACK;
    const start = this.#pos + headerLength;
    if (start + byteLength > b.length) throw FALLBACK;
    this.#pos = start + byteLength;
    return this.#keys.decode(b, start, byteLength);
  }

  #string(byteLength: number): string {
    if (byteLength > this.#limits.maxStrLength) throw FALLBACK;
    const b = this.#bytes;
    const start = this.#advance(byteLength);
    if (byteLength <= ASCII_FAST_BYTES) {
      const ascii = asciiString(b, start, byteLength);
      if (ascii !== undefined) return ascii;
    }
    return utf8Decode(b, start, byteLength);
  }

  #binary(size: number): Uint8Array {
    if (size > this.#limits.maxBinLength) throw FALLBACK;
    const start = this.#advance(size);
    return this.#bytes.subarray(start, start + size);
  }

  #ext(size: number): unknown {
    // The library reads the payload as binary data, so maxBinLength bounds it too.
    if (size > this.#limits.maxExtLength || size > this.#limits.maxBinLength) throw FALLBACK;
    const typeAt = this.#advance(1);
    const start = this.#advance(size);
    const type = (this.#bytes[typeAt] << 24) >> 24;
    return this.#extension(this.#bytes.subarray(start, start + size), type);
  }
}

/** The big-endian signed 32-bit integer at `p`. */
function int32(b: Uint8Array, p: number): number {
  return (b[p] << 24) | (b[p + 1] << 16) | (b[p + 2] << 8) | b[p + 3];
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
