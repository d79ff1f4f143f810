/**
 * The structured codec: JavaScript values cross as they went, or encoding fails and names
 * where. Values keep what their TypeScript types promise:
 *
 * | value | comes back as |
 * | --- | --- |
 * | `undefined`, `null` | `undefined`, `null` (told apart, in objects, arrays, Maps and Sets) |
 * | number | the same number, `-0`, `NaN` and `±Infinity` included |
 * | string | the same string, unpaired surrogates included |
 * | boolean, `bigint` | the same |
 * | plain object, array | a plain object (own enumerable string keys; a `null` prototype kept), an array |
 * | `Date` | a `Date` of the same time (an invalid `Date` too) |
 * | `Map`, `Set` | a `Map`, a `Set`, keys and members of any supported type, in order |
 * | `Uint8Array` | a `Uint8Array` (a view over the decoded bytes) |
 * | other typed arrays, `DataView`, `ArrayBuffer` | the same class, a copy |
 * | an `Error` (any subclass) | a `RemoteError` with its `name`, `message`, string `code`, `data` and `cause`, as the channel revives a thrown error; the stack only with `stack: true` |
 *
 * Values that cannot cross are a `CodecError` whose message names their path inside the value
 * (`$.items[3].callback`): functions, symbols (as values or keys), instances of any other class
 * (their prototype would be lost), `Buffer` and other subclasses of the built-ins, strings
 * with unpaired surrogates as object keys, and values nested deeper than `maxDepth` (a cycle
 * included). What is not kept: object identity (a value reachable twice arrives as two
 * copies), holes in arrays (they arrive as `undefined`), non-index properties of arrays, and
 * an error's other properties (as the channel drops them from a thrown error).
 *
 * The wire format is MessagePack (the `@conduit/ipc/codecs/msgpack` codec, its extension
 * types for `Date`, `Map`, `Set` and `bigint` included) with the extension types
 * {@linkcode STRUCTURED_EXT} adds. A message that needs none of them is plain MessagePack;
 * one that does is the array `[ext R, value]`, so that decoding walks only such messages.
 * Typed arrays are sent in the machine's byte order (little-endian everywhere Deno runs).
 *
 * Why MessagePack and not V8's structured serialization (`node:v8` `serialize`): in
 * `bench/codecs_structured_bench.ts`, V8's round trip is slower for a small call and for a
 * 1 MiB `Uint8Array` (it won only on large batches of records holding a `Set` each); it
 * turns class instances into plain objects and custom errors into `Error` without a word, so
 * the walk that refuses them would be needed anyway; and its format is V8's own, which no
 * peer in another language reads, while MessagePack is a documented format.
 *
 * @example
 * ```ts
 * import { structuredCodec } from "@conduit/ipc/codecs/structured";
 * import { CodecError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const codec = structuredCodec();
 * const value = {
 *   at: new Date("2024-05-06T07:08:09.010Z"),
 *   ids: new Set([1, 2]),
 *   byName: new Map([["a", 1n << 70n]]),
 *   samples: new Float64Array([0.5, -0]),
 *   missing: undefined,
 * };
 * assert.deepStrictEqual(codec.decode(codec.encode(value)), value);
 * assert.throws(
 *   () => codec.encode({ items: [{ callback: () => 1 }] }),
 *   (err) => err instanceof CodecError && err.message.includes("$.items[0].callback"),
 * );
 * ```
 *
 * @module
 */

import { CodecError, RemoteError, ShapeError } from "../errors.ts";
import { keySegment } from "./json.ts";
import { ExtData, msgpackCodec } from "./msgpack.ts";
import {
  ENCODE_AS_IS,
  FIRST_EXT_DATA,
  type RecordHooks,
  SET_RECORD_HOOKS,
} from "./_msgpack_ext.ts";
import { ShapeDecoder, ShapeEncoder } from "./_shapes.ts";
import type {
  Codec,
  ShapeDecoderTable,
  ShapeEncoderOptions,
  ShapeEncoderTable,
  ShapeLimits,
  ShapingCodec,
} from "./types.ts";

export { DEFAULT_SHAPE_LIMITS, Shape, ShapeDecoder, ShapeEncoder } from "./_shapes.ts";
// The types this codec's API shows, so that its documentation is complete on its own.
export type * from "./types.ts";

/**
 * The MessagePack extension types this codec adds (each payload is described beside it).
 *
 * @example
 * ```ts
 * import { STRUCTURED_EXT, structuredCodec } from "@conduit/ipc/codecs/structured";
 * import assert from "node:assert/strict";
 *
 * // [ext R, ext U]: a message that needs reviving, holding `undefined`.
 * const bytes = structuredCodec().encode(undefined);
 * assert.deepEqual([...bytes], [0x92, 0xc7, 0, STRUCTURED_EXT.revive, 0xc7, 0, STRUCTURED_EXT.undefined]);
 * ```
 */
export const STRUCTURED_EXT: {
  /** `0x52` ("R"), empty: the first item of a message whose value holds the others. */
  readonly revive: number;
  /** `0x55` ("U"), empty: `undefined`. */
  readonly undefined: number;
  /** `0x5a` ("Z"), empty: `-0`. */
  readonly negativeZero: number;
  /** `0x49` ("I"), empty: an invalid `Date`. */
  readonly invalidDate: number;
  /** `0x53` ("S"): a string with unpaired surrogates, as its UTF-16 code units (little-endian). */
  readonly wtf16: number;
  /** `0x54` ("T"): a typed array, `DataView` or `ArrayBuffer`: one kind byte (see the source's
   * `VIEW_KINDS`), then the bytes. */
  readonly typed: number;
  /** `0x45` ("E"), empty: the first item of `[ext E, { name, message, code?, data?, stack?,
   * cause? }]`, an error. */
  readonly error: number;
  /** `0x4e` ("N"), empty: the first item of `[ext N, record]`, an object with a `null`
   * prototype. */
  readonly nullPrototype: number;
  /** `0x4b` ("K"): the first item of `[ext K, value…]`, a record of a shape the peer defined
   * (docs/protocol.md §14), written only by `encodeShaped`; the payload is the shape id, a
   * fixext 1 or 2 (big-endian). It needs no `[ext R, …]` wrapper. */
  readonly shape: number;
} = Object.freeze({
  revive: 0x52,
  undefined: 0x55,
  negativeZero: 0x5a,
  invalidDate: 0x49,
  wtf16: 0x53,
  typed: 0x54,
  error: 0x45,
  nullPrototype: 0x4e,
  shape: 0x4b,
});

/** The codec's `name` on the wire: `"structured"`. */
export const STRUCTURED_CODEC_NAME = "structured";

/** The default `maxDepth`: `100`, as the MessagePack codec's. */
export const DEFAULT_STRUCTURED_MAX_DEPTH = 100;

/** Options of {@linkcode structuredCodec}. */
export interface StructuredCodecOptions {
  /**
   * The deepest level a value may sit at, the top-level value being level 1: `100` allows 99
   * containers (objects, arrays, Maps, Sets, errors) around a leaf. One level more, or a cycle,
   * is a `CodecError` on encode.
   *
   * @default {DEFAULT_STRUCTURED_MAX_DEPTH}
   */
  maxDepth?: number;
  /**
   * Whether errors inside values carry their stack trace: only towards a peer you trust
   * with it (a worker you spawned). Decoded errors keep it as `remoteStack`.
   *
   * @default {false}
   */
  stack?: boolean;
}

/**
 * Creates a structured codec. Each instance keeps its own MessagePack codec and scratch
 * buffers: create one per channel rather than one per message.
 *
 * @typeParam T The values this codec carries.
 * @param options The depth limit and whether errors carry stacks.
 * @returns A codec named `"structured"`.
 *
 * @example Errors inside values
 * ```ts
 * import { structuredCodec } from "@conduit/ipc/codecs/structured";
 * import { RemoteError } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * const codec = structuredCodec();
 * const failure = Object.assign(new RangeError("too big"), { code: "E_SIZE" });
 * const { error } = codec.decode(codec.encode({ error: failure })) as { error: RemoteError };
 * assert.ok(error instanceof RemoteError);
 * assert.equal(error.name, "RangeError");
 * assert.equal(error.code, "E_SIZE");
 * assert.equal(error.message, "too big");
 * ```
 */
export function structuredCodec<T = unknown>(
  options: StructuredCodecOptions = {},
): ShapingCodec<T> {
  return new _StructuredCodec<T>(options);
}

/**
 * After a value that could not go as it is, how many encodes take the careful path at once: a
 * channel whose values all need it then pays for a wasted first pass once in this many + 1.
 */
const AS_IS_BACKOFF = 8;

/** conduit's MessagePack codec with the two methods it keeps for the structured codec. */
type InnerCodec = Codec<unknown> & {
  [SET_RECORD_HOOKS](hooks: RecordHooks): void;
  [ENCODE_AS_IS](value: unknown, maxDepth: number): Uint8Array | undefined;
  [FIRST_EXT_DATA](): ExtData | undefined;
};

/** A value that cannot cross, and the path to it, built innermost first while unwinding. */
class Refusal {
  readonly segments: string[] = [];
  readonly reason: string;
  readonly containers: unknown[];
  // Plain fields, not parameter properties: Node's type stripping cannot erase those.
  constructor(reason: string, containers: unknown[] = []) {
    this.reason = reason;
    this.containers = containers;
  }
}

class _StructuredCodec<T> implements ShapingCodec<T> {
  readonly name: string = STRUCTURED_CODEC_NAME;
  readonly #inner: InnerCodec;
  readonly #maxDepth: number;
  readonly #stack: boolean;
  /** Set while preparing a value when it needed an extension of this codec. */
  #changed = false;
  /** Encodes left that skip the first pass, after one that found a value not as it is. */
  #asIsSkips = 0;
  /** The table of the encode or decode under way, when it sends records by shape. */
  #encodeShapes: ShapeEncoderTable | undefined;
  #decodeShapes: ShapeDecoderTable | undefined;
  readonly #reading: RecordHooks;
  readonly #writing: RecordHooks;

  constructor(options: StructuredCodecOptions) {
    const maxDepth = options.maxDepth ?? DEFAULT_STRUCTURED_MAX_DEPTH;
    if (!Number.isInteger(maxDepth) || maxDepth < 1 || maxDepth > 10_000) {
      throw new RangeError(`maxDepth must be an integer from 1 to 10000, got ${maxDepth}`);
    }
    this.#maxDepth = maxDepth;
    this.#stack = options.stack ?? false;
    // An error or a null-prototype object takes two MessagePack levels ([ext, fields]) where
    // it counts one here, and the revive wrapper one more.
    this.#inner = msgpackCodec({ maxDepth: 2 * maxDepth + 2 }) as InnerCodec;
    // Records by shape are written and read by the MessagePack writer and reader themselves,
    // with no array made per record nor a walk of the decoded value: read always (a shaped
    // record without shapes is an error, not an array), written during encodeShaped only.
    const keysOf = (bytes: Uint8Array, start: number, length: number): readonly string[] => {
      const id = length === 1 ? bytes[start] : (bytes[start] << 8) | bytes[start + 1];
      const shapes = this.#decodeShapes;
      if (shapes === undefined) {
        throw new ShapeError(`A record of shape ${id} where the channel uses no shapes`);
      }
      return shapes.keysOf(id);
    };
    this.#reading = { type: STRUCTURED_EXT.shape, keysOf };
    this.#writing = {
      type: STRUCTURED_EXT.shape,
      keysOf,
      markOf: (keys) => {
        const shape = this.#encodeShapes!.shapeOf(keys);
        return shape === undefined ? undefined : shapeMark(shape.id);
      },
    };
    this.#inner[SET_RECORD_HOOKS](this.#reading);
  }

  encode(value: T): Uint8Array {
    return this.encodeView(value).slice();
  }

  encodeView(value: T): Uint8Array {
    // Most values need nothing of this codec's own (no undefined, Map, error…): one pass writes
    // them as they are. Any other takes the careful path: prepared (what MessagePack cannot
    // carry made into this codec's extensions, or refused with its path), then written.
    if (this.#asIsSkips > 0) this.#asIsSkips--;
    else if (value !== undefined) {
      const bytes = this.#inner[ENCODE_AS_IS](value, this.#maxDepth);
      if (bytes !== undefined) return bytes;
      this.#asIsSkips = AS_IS_BACKOFF;
      // The first pass may have listed shapes and counted records: the careful one lists
      // those it uses again, and counts them again.
      this.#encodeShapes?.startEncode(true);
    }
    const prepared = this.#prepareMessage(value);
    try {
      return this.#inner.encodeView!(prepared);
    } catch (err) {
      throw this.#rename("encode", err);
    }
  }

  encodeShaped(value: T, shapes: ShapeEncoderTable): Uint8Array {
    shapes.startEncode();
    this.#encodeShapes = shapes;
    this.#inner[SET_RECORD_HOOKS](this.#writing);
    try {
      return this.encodeView(value);
    } finally {
      this.#encodeShapes = undefined;
      this.#inner[SET_RECORD_HOOKS](this.#reading);
    }
  }

  shapeEncoder(options?: ShapeEncoderOptions): ShapeEncoder {
    return new ShapeEncoder(options);
  }

  shapeDecoder(limits?: Partial<ShapeLimits>): ShapeDecoder {
    return new ShapeDecoder(limits);
  }

  decodeShaped(bytes: Uint8Array, shapes: ShapeDecoderTable): T {
    this.#decodeShapes = shapes;
    try {
      return this.decode(bytes);
    } finally {
      this.#decodeShapes = undefined;
    }
  }

  decode(bytes: Uint8Array): T {
    let decoded: unknown;
    try {
      decoded = this.#inner.decode(bytes);
    } catch (err) {
      throw this.#rename("decode", err);
    }
    if (!Array.isArray(decoded) || decoded.length !== 2 || !isMark(decoded[0], REVIVE)) {
      // Only the wrapper carries this codec's extensions: one anywhere else is no value it wrote.
      const ext = this.#inner[FIRST_EXT_DATA]();
      if (ext !== undefined) throw this.#refuse("decode", unknownExt(ext));
      return decoded as T;
    }
    try {
      return this.#revive(decoded[1], 1) as T;
    } catch (cause) {
      throw this.#refuse("decode", cause);
    }
  }

  #prepareMessage(value: unknown): unknown {
    this.#changed = false;
    let prepared: unknown;
    try {
      prepared = this.#prepare(value, 1);
    } catch (cause) {
      throw this.#refuse("encode", cause);
    }
    return this.#changed ? [REVIVE, prepared] : prepared;
  }

  /** The MessagePack codec's error, as this codec's. */
  #rename(operation: "encode" | "decode", err: unknown): CodecError {
    return new CodecError(this.name, operation, err instanceof CodecError ? err.cause : err);
  }

  #refuse(operation: "encode" | "decode", cause: unknown): CodecError {
    if (!(cause instanceof Refusal)) return new CodecError(this.name, operation, cause);
    const segments = cause.segments.reverse();
    const containers = cause.containers.reverse();
    // Root first, containers[k] is reached through segments[0..k-1]: a container met again
    // is a cycle, reported where it closes rather than maxDepth levels down.
    const seen = new Map<unknown, number>();
    for (const [k, container] of containers.entries()) {
      const first = seen.get(container);
      if (first !== undefined) {
        const path = "$" + segments.slice(0, k).join("");
        const target = "$" + segments.slice(0, first).join("");
        return new CodecError(
          this.name,
          operation,
          new TypeError(`${path} is a cycle: the same object as ${target}`),
        );
      }
      seen.set(container, k);
    }
    const path = "$" + segments.join("");
    return new CodecError(this.name, operation, new TypeError(`${path} is ${cause.reason}`));
  }

  /** The value as MessagePack carries it: itself when nothing in it needs an extension. */
  #prepare(value: unknown, level: number): unknown {
    switch (typeof value) {
      case "number":
        if (value === 0 && 1 / value < 0) {
          this.#changed = true;
          return NEGATIVE_ZERO;
        }
        return value;
      case "string":
        if (value.isWellFormed()) return value;
        this.#changed = true;
        return wtf16(value);
      case "boolean":
      case "bigint":
        return value;
      case "undefined":
        this.#changed = true;
        return UNDEFINED;
      case "function":
        throw new Refusal(`a function (${describeFunction(value)}), which cannot cross`);
      case "symbol":
        throw new Refusal(`a symbol (${String(value)}), which cannot cross`);
      default:
        return value === null ? null : this.#prepareObject(value as object, level);
    }
  }

  #prepareObject(object: object, level: number): unknown {
    const proto = Object.getPrototypeOf(object);
    try {
      if (proto === Object.prototype) return this.#prepareRecord(object, level);
      if (proto === null) {
        this.#changed = true;
        return [NULL_PROTOTYPE, this.#prepareRecord(object, level)];
      }
      if (proto === Array.prototype) return this.#prepareArray(object as unknown[], level);
      if (proto === Uint8Array.prototype || proto === Date.prototype) {
        if (proto === Uint8Array.prototype || !Number.isNaN((object as Date).getTime())) {
          return object;
        }
        this.#changed = true;
        return INVALID_DATE;
      }
      if (proto === Map.prototype) return this.#prepareMap(object as Map<unknown, unknown>, level);
      if (proto === Set.prototype) return this.#prepareSet(object as Set<unknown>, level);
      const kind = KIND_OF.get(proto);
      if (kind !== undefined) {
        this.#changed = true;
        return typedExt(kind, object as ArrayBufferView | ArrayBuffer);
      }
      if (object instanceof Error) return this.#prepareError(object, level);
    } catch (err) {
      if (err instanceof Refusal) err.containers.push(object);
      throw err;
    }
    throw new Refusal(`${describeInstance(object, proto)}, which cannot cross`);
  }

  #deeper(level: number): number {
    if (level >= this.#maxDepth) {
      throw new Refusal(`nested deeper than maxDepth (${this.#maxDepth})`);
    }
    return level + 1;
  }

  #prepareRecord(record: object, level: number): unknown {
    const keys = Object.keys(record);
    if (Object.getOwnPropertySymbols(record).length > 0) {
      const symbol = Object.getOwnPropertySymbols(record)[0];
      throw new Refusal(`an object with a symbol key (${String(symbol)}), which cannot cross`);
    }
    if (keys.length === 0) return record;
    const next = this.#deeper(level);
    let out: Record<string, unknown> | undefined;
    const source = record as Record<string, unknown>;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const item = source[key];
      let prepared: unknown;
      try {
        if (!key.isWellFormed()) {
          throw new Refusal("a key with unpaired surrogates, which cannot cross");
        }
        prepared = this.#prepare(item, next);
      } catch (err) {
        if (err instanceof Refusal) err.segments.push(keySegment(key));
        throw err;
      }
      if (prepared !== item && out === undefined) {
        // A plain object (so that it is sent by shape too), "__proto__" an own property of it
        // as of the source.
        out = {};
        for (let j = 0; j < i; j++) setData(out, keys[j], source[keys[j]]);
      }
      if (out !== undefined) setData(out, key, prepared);
    }
    return out ?? record;
  }

  #prepareArray(array: unknown[], level: number): unknown {
    const length = array.length;
    if (length === 0) return array;
    const next = this.#deeper(level);
    let out: unknown[] | undefined;
    for (let i = 0; i < length; i++) {
      const item = array[i];
      let prepared: unknown;
      try {
        prepared = this.#prepare(item, next);
      } catch (err) {
        if (err instanceof Refusal) err.segments.push(`[${i}]`);
        throw err;
      }
      if (prepared !== item && out === undefined) out = array.slice(0, i);
      if (out !== undefined) out[i] = prepared;
    }
    return out ?? array;
  }

  #prepareMap(map: Map<unknown, unknown>, level: number): unknown {
    if (map.size === 0) return map;
    const next = this.#deeper(level);
    let out: Map<unknown, unknown> | undefined;
    let i = 0;
    for (const [key, item] of map) {
      let preparedKey: unknown;
      let prepared: unknown;
      try {
        preparedKey = this.#prepare(key, next);
      } catch (err) {
        if (err instanceof Refusal) err.segments.push(`.keys()[${i}]`);
        throw err;
      }
      try {
        prepared = this.#prepare(item, next);
      } catch (err) {
        if (err instanceof Refusal) err.segments.push(`.get(${describeKey(key, i)})`);
        throw err;
      }
      if ((preparedKey !== key || prepared !== item) && out === undefined) {
        out = new Map();
        let j = 0;
        for (const entry of map) {
          if (j++ === i) break;
          out.set(entry[0], entry[1]);
        }
      }
      out?.set(preparedKey, prepared);
      i++;
    }
    return out ?? map;
  }

  #prepareSet(set: Set<unknown>, level: number): unknown {
    if (set.size === 0) return set;
    const next = this.#deeper(level);
    let out: unknown[] | undefined;
    let i = 0;
    for (const member of set) {
      let prepared: unknown;
      try {
        prepared = this.#prepare(member, next);
      } catch (err) {
        if (err instanceof Refusal) err.segments.push(`.values()[${i}]`);
        throw err;
      }
      if (prepared !== member && out === undefined) out = [...set].slice(0, i);
      out?.push(prepared);
      i++;
    }
    return out === undefined ? set : new Set(out);
  }

  #prepareError(error: Error, level: number): unknown {
    this.#changed = true;
    const next = this.#deeper(level);
    const source = error as Error & { code?: unknown; data?: unknown };
    const fields: Record<string, unknown> = {
      name: typeof source.name === "string" ? source.name : "Error",
      message: typeof source.message === "string" ? source.message : String(error),
    };
    if (typeof source.code === "string") fields.code = source.code;
    const trace = error instanceof RemoteError ? error.remoteStack ?? error.stack : error.stack;
    if (this.#stack && typeof trace === "string") fields.stack = trace;
    for (const key of ["data", "cause"] as const) {
      const item = source[key];
      if (item === undefined) continue;
      try {
        fields[key] = this.#prepare(item, next);
      } catch (err) {
        if (err instanceof Refusal) err.segments.push(`.${key}`);
        throw err;
      }
    }
    return [ERROR, fields];
  }

  /** Undoes {@linkcode #prepare} in place, on a value this codec's MessagePack decoded. */
  #revive(value: unknown, level: number): unknown {
    if (typeof value !== "object" || value === null) return value;
    if (level > 2 * this.#maxDepth + 2) {
      throw new RangeError(`Value nests deeper than maxDepth (${this.#maxDepth})`);
    }
    const next = level + 1;
    if (value instanceof ExtData) return reviveExt(value);
    if (Array.isArray(value)) {
      if (value.length === 2 && isMark(value[0], ERROR)) return this.#reviveError(value[1], next);
      if (value.length === 2 && isMark(value[0], NULL_PROTOTYPE)) {
        const record = this.#revive(value[1], next);
        if (Object.getPrototypeOf(record) !== Object.prototype) {
          throw new TypeError("A null-prototype payload must be a map");
        }
        return Object.assign(Object.create(null), record);
      }
      for (let i = 0; i < value.length; i++) value[i] = this.#revive(value[i], next);
      return value;
    }
    if (value instanceof Map) {
      const out = new Map();
      for (const [key, item] of value) out.set(this.#revive(key, next), this.#revive(item, next));
      return out;
    }
    if (value instanceof Set) {
      const out = new Set();
      for (const member of value) out.add(this.#revive(member, next));
      return out;
    }
    if (Object.getPrototypeOf(value) === Object.prototype) {
      const record = value as Record<string, unknown>;
      for (const key of Object.keys(record)) record[key] = this.#revive(record[key], next);
    }
    return value;
  }

  #reviveError(value: unknown, level: number): RemoteError {
    const fields = value as Record<string, unknown> | null;
    if (
      typeof fields !== "object" || fields === null || typeof fields.name !== "string" ||
      typeof fields.message !== "string"
    ) {
      throw new TypeError("An error payload needs a string name and message");
    }
    const { name, message, code, stack } = fields;
    const cause = "cause" in fields ? this.#revive(fields.cause, level) : undefined;
    return new RemoteError(
      {
        name,
        message,
        code: typeof code === "string" ? code : undefined,
        data: "data" in fields ? this.#revive(fields.data, level) : undefined,
        stack: typeof stack === "string" ? stack : undefined,
      },
      "cause" in fields ? { cause } : undefined,
    );
  }
}

/** Sets `key`, as an own data property when it is `"__proto__"` (not the prototype). */
function setData(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key !== "__proto__") object[key] = value;
  else {
    Object.defineProperty(object, key, {
      value,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
}

function describeKey(key: unknown, index: number): string {
  if (typeof key === "string") return JSON.stringify(key);
  if (typeof key === "number" || typeof key === "boolean") return String(key);
  if (typeof key === "bigint") return `${key}n`;
  return `<key ${index}>`;
}

function describeFunction(fn: unknown): string {
  const name = (fn as { name?: unknown }).name;
  return typeof name === "string" && name !== "" ? name : "anonymous";
}

function describeInstance(object: object, proto: object): string {
  const ctor = (proto as { constructor?: { name?: unknown } }).constructor;
  const name = typeof ctor?.name === "string" && ctor.name !== ""
    ? ctor.name
    : "an anonymous class";
  const base = KIND_OF.has(Object.getPrototypeOf(proto) ?? {}) ||
      [Uint8Array, Map, Set, Date, Array].some((cls) => object instanceof cls)
    ? " (a subclass of a built-in; send an instance of the built-in itself)"
    : "";
  return `an instance of ${name}${base}`;
}

// The extension types' values: marks, typed array kinds, and the payloads of `undefined`,
// `-0`, invalid Dates, unpaired surrogates and views.

/** A kind of view in a {@linkcode STRUCTURED_EXT.typed} payload; its index is its kind byte. */
interface ViewKind {
  name: string;
  proto: object;
  make(buffer: ArrayBuffer): ArrayBufferView | ArrayBuffer;
}

type TypedArrayClass = new (buffer: ArrayBuffer) => ArrayBufferView;

/** The kinds, in kind-byte order. Float16Array is last of the typed arrays: not every Deno
 * has it, and a peer without it refuses the kind rather than misread another. */
const VIEW_KINDS: readonly ViewKind[] = [
  ...([
    ["Int8Array", Int8Array],
    ["Uint8ClampedArray", Uint8ClampedArray],
    ["Int16Array", Int16Array],
    ["Uint16Array", Uint16Array],
    ["Int32Array", Int32Array],
    ["Uint32Array", Uint32Array],
    ["Float32Array", Float32Array],
    ["Float64Array", Float64Array],
    ["BigInt64Array", BigInt64Array],
    ["BigUint64Array", BigUint64Array],
  ] as Array<[string, TypedArrayClass]>).map(([name, cls]) => typedKind(name, cls)),
  { name: "DataView", proto: DataView.prototype, make: (buffer) => new DataView(buffer) },
  { name: "ArrayBuffer", proto: ArrayBuffer.prototype, make: (buffer) => buffer },
  typedKind("Float16Array", (globalThis as { Float16Array?: TypedArrayClass }).Float16Array),
];

function typedKind(name: string, cls: TypedArrayClass | undefined): ViewKind {
  if (cls === undefined) {
    return {
      name,
      proto: Object.create(null),
      make: () => {
        throw new TypeError(`This runtime has no ${name}`);
      },
    };
  }
  return { name, proto: cls.prototype, make: (buffer) => new cls(buffer) };
}

const KIND_OF = new Map<object, number>(VIEW_KINDS.map((kind, i) => [kind.proto, i]));

const mark = (type: number): ExtData => Object.freeze(new ExtData(type, new Uint8Array(0)));
const REVIVE = mark(STRUCTURED_EXT.revive);
const UNDEFINED = mark(STRUCTURED_EXT.undefined);
const NEGATIVE_ZERO = mark(STRUCTURED_EXT.negativeZero);
const INVALID_DATE = mark(STRUCTURED_EXT.invalidDate);
const ERROR = mark(STRUCTURED_EXT.error);
const NULL_PROTOTYPE = mark(STRUCTURED_EXT.nullPrototype);

/** The markers of shape ids, made as they are first used. */
const shapeMarks: ExtData[] = [];

function shapeMark(id: number): ExtData {
  return shapeMarks[id] ??= Object.freeze(
    new ExtData(
      STRUCTURED_EXT.shape,
      id < 0x100 ? new Uint8Array([id]) : new Uint8Array([id >> 8, id & 0xff]),
    ),
  );
}

function isMark(value: unknown, which: ExtData): boolean {
  return value instanceof ExtData && value.type === which.type && value.data.length === 0;
}

function reviveExt(ext: ExtData): unknown {
  const data = ext.data as Uint8Array;
  switch (ext.type) {
    case STRUCTURED_EXT.undefined:
      return undefined;
    case STRUCTURED_EXT.negativeZero:
      return -0;
    case STRUCTURED_EXT.invalidDate:
      return new Date(NaN);
    case STRUCTURED_EXT.wtf16: {
      if (data.length % 2 !== 0) throw new TypeError("A UTF-16 payload has an odd length");
      const units = new Uint16Array(data.length / 2);
      new Uint8Array(units.buffer).set(data);
      let text = "";
      for (let i = 0; i < units.length; i += 8192) {
        text += String.fromCharCode(...units.subarray(i, i + 8192));
      }
      return text;
    }
    case STRUCTURED_EXT.typed: {
      const kind = VIEW_KINDS[data[0]];
      if (data.length === 0 || kind === undefined) {
        throw new TypeError(`Unknown typed array kind ${data[0]}`);
      }
      const buffer = new ArrayBuffer(data.length - 1);
      new Uint8Array(buffer).set(data.subarray(1));
      try {
        return kind.make(buffer);
      } catch (cause) {
        throw new TypeError(`${data.length - 1} bytes do not hold whole ${kind.name} items`, {
          cause,
        });
      }
    }
    default:
      throw unknownExt(ext);
  }
}

function unknownExt(ext: ExtData): TypeError {
  return new TypeError(`Unknown extension type ${ext.type}`);
}

function typedExt(kind: number, view: ArrayBufferView | ArrayBuffer): ExtData {
  const bytes = ArrayBuffer.isView(view)
    ? new Uint8Array(view.buffer, view.byteOffset, view.byteLength)
    : new Uint8Array(view);
  const payload = new Uint8Array(bytes.length + 1);
  payload[0] = kind;
  payload.set(bytes, 1);
  return new ExtData(STRUCTURED_EXT.typed, payload);
}

function wtf16(text: string): ExtData {
  const units = new Uint16Array(text.length);
  for (let i = 0; i < text.length; i++) units[i] = text.charCodeAt(i);
  return new ExtData(STRUCTURED_EXT.wtf16, new Uint8Array(units.buffer));
}

// Shape tables: records of one shape (the same keys in the same order) sent with their keys
// once per direction of a channel, later ones with their values only (docs/protocol.md §14).
