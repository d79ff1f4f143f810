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

import { CodecError, RemoteError } from "../errors.ts";
import { ExtData, msgpackCodec } from "./msgpack.ts";
import {
  ERROR,
  INVALID_DATE,
  isMark,
  KIND_OF,
  NEGATIVE_ZERO,
  NULL_PROTOTYPE,
  REVIVE,
  reviveExt,
  STRUCTURED_EXT,
  typedExt,
  UNDEFINED,
  unknownExt,
  wtf16,
} from "./structured_ext.ts";
import type { Codec } from "./types.ts";
import { keySegment } from "./_value_path.ts";

export type { Codec };
export { STRUCTURED_EXT };

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
export function structuredCodec<T = unknown>(options: StructuredCodecOptions = {}): Codec<T> {
  return new _StructuredCodec<T>(options);
}

/** A value that cannot cross, and the path to it, built innermost first while unwinding. */
class Refusal {
  readonly segments: string[] = [];
  constructor(readonly reason: string, readonly containers: unknown[] = []) {}
}

class _StructuredCodec<T> implements Codec<T> {
  readonly name: string = STRUCTURED_CODEC_NAME;
  readonly #inner: Codec<unknown>;
  readonly #maxDepth: number;
  readonly #stack: boolean;
  /** Set while preparing a value when it needed an extension of this codec. */
  #changed = false;

  constructor(options: StructuredCodecOptions) {
    const maxDepth = options.maxDepth ?? DEFAULT_STRUCTURED_MAX_DEPTH;
    if (!Number.isInteger(maxDepth) || maxDepth < 1 || maxDepth > 10_000) {
      throw new RangeError(`maxDepth must be an integer from 1 to 10000, got ${maxDepth}`);
    }
    this.#maxDepth = maxDepth;
    this.#stack = options.stack ?? false;
    // An error or a null-prototype object takes two MessagePack levels ([ext, fields]) where
    // it counts one here, and the revive wrapper one more.
    this.#inner = msgpackCodec({ maxDepth: 2 * maxDepth + 2 });
  }

  encode(value: T): Uint8Array {
    const prepared = this.#prepareMessage(value);
    try {
      return this.#inner.encode(prepared);
    } catch (err) {
      throw this.#rename("encode", err);
    }
  }

  encodeView(value: T): Uint8Array {
    const prepared = this.#prepareMessage(value);
    try {
      return this.#inner.encodeView!(prepared);
    } catch (err) {
      throw this.#rename("encode", err);
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
      if (decoded instanceof ExtData) throw this.#refuse("decode", unknownExt(decoded));
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
        // A null prototype: assigning "__proto__" then makes an own property, as the source has.
        out = Object.create(null) as Record<string, unknown>;
        for (let j = 0; j < i; j++) out[keys[j]] = source[keys[j]];
      }
      if (out !== undefined) out[key] = prepared;
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
