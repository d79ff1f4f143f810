/**
 * conduit's MessagePack reader, {@linkcode MsgpackReader}, which `codecs/msgpack.ts` wraps.
 *
 * @module
 */

import { type RecordHooks, TWO_32 } from "./_msgpack_ext.ts";

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
/**
 * Cached keys per bucket (64 per byte length, by a hash of the first and last bytes); a full
 * bucket replaces one at random. Buckets, not one list per length, so that records of more keys
 * than a list holds do not evict each other's keys at every record.
 */
const KEYS_PER_BUCKET = 4;
const EMPTY = new Uint8Array(0);
/**
 * A template per shape's keys (the frozen array its table holds): an object of those keys.
 * One for all readers, so that nested payloads' readers do not each keep one per shape.
 */
const templates = new WeakMap<readonly string[], Record<string, unknown>>();
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
    const keys = records.keysOf(this.#bytes, start, idBytes);
    if (keys.length !== values) {
      throw new TypeError(`A record has ${values} values for the ${keys.length} keys of its shape`);
    }
    // A copy of the shape's template has all its keys at once, as a fast object: set one by
    // one, many keys would make a dictionary object, several times the size and slower to
    // build (and a peer's records by shape cost it their values' bytes alone).
    let template = templates.get(keys);
    if (template === undefined) {
      template = Object.fromEntries(keys.map((key) => [key, undefined]));
      // Kept by the array's identity: only while it cannot change.
      if (Object.isFrozen(keys)) templates.set(keys, template);
    }
    const object: Record<string, unknown> = { ...template };
    // An own "__proto__" of the copy is set as data, not as the prototype.
    for (let i = 0; i < values; i++) object[keys[i]] = this.#value(depth + 1);
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
export class KeyCache {
  /** Each bucket holds keys as their bytes and their string (see `bucketOf`). */
  readonly #buckets: Array<Array<{ bytes: Uint8Array; text: string }>> = Array.from(
    { length: (KEY_CACHE_BYTES + 1) << 6 },
    () => [],
  );

  find(b: Uint8Array, start: number, length: number): string | undefined {
    const bucket = this.#buckets[bucketOf(b, start, start + length)];
    search: for (let k = 0; k < bucket.length; k++) {
      const entry = bucket[k];
      const bytes = entry.bytes;
      for (let i = 0; i < length; i++) if (bytes[i] !== b[start + i]) continue search;
      return entry.text;
    }
    return undefined;
  }

  store(b: Uint8Array, start: number, length: number, text: string): string {
    const bucket = this.#buckets[bucketOf(b, start, start + length)];
    const entry = { bytes: b.slice(start, start + length), text };
    if (bucket.length < KEYS_PER_BUCKET) bucket.push(entry);
    else bucket[(Math.random() * KEYS_PER_BUCKET) | 0] = entry;
    return text;
  }
}

/**
 * The bucket of a key (1 to KEY_CACHE_BYTES bytes) from `start` to `end`, by its length, first
 * and last two bytes (a key of one byte: its header byte, the same for all of them, and itself).
 */
function bucketOf(b: Uint8Array, start: number, end: number): number {
  return ((end - start) << 6) | ((b[start] * 961 + b[end - 2] * 31 + b[end - 1]) & 63);
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
