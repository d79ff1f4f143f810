/**
 * The JSON codec: values as UTF-8 JSON text (RFC 8259), with no dependencies.
 *
 * A value JSON would silently change is refused: encoding it is a `CodecError` whose message
 * names its path inside the value (`$.counts is an instance of Map, which JSON writes as {}`),
 * so that a caller never receives something other than what its type says. Refused:
 *
 * | value | what `JSON.stringify` would make of it |
 * | --- | --- |
 * | `Map`, `Set`, typed arrays, `ArrayBuffer`, errors, instances of any class without a `toJSON()` method | a plain object of its own enumerable properties (`{}` for a `Map`) |
 * | `NaN`, `Infinity`, `-Infinity` | `null` |
 * | `undefined` (or a hole) in an array | `null` |
 * | functions, symbols | dropped from objects, `null` in arrays |
 * | a property with a symbol key (enumerable) | dropped |
 * | an invalid `Date` | `null` |
 * | `bigint` (without a `toJSON()`) | nothing: `JSON.stringify` throws |
 * | a cycle | nothing: `JSON.stringify` throws |
 *
 * Let through, as JSON has always done: an object with a `toJSON()` method becomes what that
 * returns (a `Date` its ISO string), a property whose value is `undefined` is left out (it
 * reads back as missing, as an optional property), and `-0` becomes `0`. What a `toJSON()`
 * returns is checked as any value (`$.price.toJSON().tags is an instance of Set`), so the check
 * calls it once and `JSON.stringify` once more; a `Date`'s own method is not called. Not
 * looked at: non-enumerable properties and an array's properties other than its items, which
 * JSON does not write, and what the rare `toJSON()` JSON calls unseen returns (one on an
 * array, or a non-enumerable one on a plain object). With
 * `jsonCodec({ lossy: true })` nothing is checked and `JSON.stringify` has the last word, as
 * in a peer that does not check either.
 *
 * Strings survive whole, lone surrogates included (`JSON.stringify` writes them as `\udXXX`
 * escapes). A `"__proto__"` key decodes as an ordinary own property, never as a prototype.
 * There is no depth limit of its own: a value too deep for the engine's recursion is a
 * `CodecError`.
 *
 * @example
 * ```ts
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import assert from "node:assert/strict";
 *
 * const codec = jsonCodec<{ id: number; tags: string[] }>();
 * const bytes = codec.encode({ id: 7, tags: ["a", "b"] });
 * assert.equal(new TextDecoder().decode(bytes), '{"id":7,"tags":["a","b"]}');
 * assert.deepEqual(codec.decode(bytes), { id: 7, tags: ["a", "b"] });
 * ```
 *
 * @module
 */

import { CodecError } from "../errors.ts";
import type { Codec } from "./types.ts";

export type { Codec };

/** The codec's `name` on the wire: `"json"`. */
export const JSON_CODEC_NAME = "json";

/** A value JSON represents exactly. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

/** Options of {@linkcode jsonCodec}. */
export interface JsonCodecOptions {
  /**
   * Whether to let `JSON.stringify` change values silently (a `Map` to `{}`, `NaN` to `null`)
   * instead of refusing them: for a peer that expects exactly what `JSON.stringify` writes, or
   * the last bit of encoding speed on values known to be plain.
   *
   * @default {false}
   */
  lossy?: boolean;
}

/**
 * Creates a JSON codec. Its only state is the scratch buffer behind
 * {@linkcode Codec.encodeView}, so one instance serves any number of channels as long as each
 * view is used before the next call; the type parameter only types the values.
 *
 * @typeParam T The values this codec carries.
 * @param options Whether values JSON would change are let through.
 * @returns A codec named `"json"`.
 *
 * @example Encode failures are a CodecError
 * ```ts
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { CodecError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const codec = jsonCodec();
 * assert.throws(() => codec.encode({ n: 1n }), CodecError);
 * assert.throws(() => codec.decode(new Uint8Array([0x7b])), CodecError); // "{"
 * assert.throws(
 *   () => codec.encode({ counts: new Map([["a", 1]]) }),
 *   (err) => err instanceof CodecError && err.message.includes("$.counts is an instance of Map"),
 * );
 * ```
 *
 * @example Letting JSON.stringify have its way
 * ```ts
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import assert from "node:assert/strict";
 *
 * const codec = jsonCodec({ lossy: true });
 * const bytes = codec.encode({ counts: new Map([["a", 1]]), ratio: NaN });
 * assert.deepEqual(codec.decode(bytes), { counts: {}, ratio: null });
 * ```
 */
export function jsonCodec<T = unknown>(options: JsonCodecOptions = {}): Codec<T> {
  return new _JsonCodec<T>(options.lossy ?? false);
}

/** The scratch buffer's first size; it grows to fit larger messages. */
const INITIAL_SCRATCH_BYTES = 4096;
/** Scratch buffers up to this size are kept for the next message; a text that needs more is
 * encoded into a buffer of its own. */
const RETAINED_SCRATCH_LIMIT = 4 * 1024 * 1024;
/** UTF-8 takes at most 3 bytes per UTF-16 unit (a surrogate pair: 4 bytes for 2 units). */
const MAX_BYTES_PER_UNIT = 3;
const NO_SCRATCH = new Uint8Array(0);

const encoder = new TextEncoder();
// Deno decodes with `fatal: true` about four times slower than without (another op), so
// decode goes the lenient way and takes the strict one only when the text holds a U+FFFD: the
// lenient decoder writes one for every invalid sequence, and valid input decodes the same
// either way, so the outcome (text or error) is exactly the strict decoder's.
const lenientDecoder = new TextDecoder("utf-8");
const strictDecoder = new TextDecoder("utf-8", { fatal: true });

class _JsonCodec<T> implements Codec<T> {
  readonly name: string = JSON_CODEC_NAME;
  readonly #lossy: boolean;
  #scratch: Uint8Array = NO_SCRATCH;

  constructor(lossy: boolean) {
    if (typeof lossy !== "boolean") {
      throw new TypeError(`jsonCodec option lossy must be a boolean, got ${typeof lossy}`);
    }
    this.#lossy = lossy;
  }

  encode(value: T): Uint8Array {
    return encoder.encode(this.#stringify(value));
  }

  encodeView(value: T): Uint8Array {
    const text = this.#stringify(value);
    let scratch = this.#scratch;
    // A text longer than the scratch cannot fit: every unit takes a byte at least.
    if (text.length <= scratch.length) {
      const { read, written } = encoder.encodeInto(text, scratch);
      if (read === text.length) return scratch.subarray(0, written);
    }
    const worstCase = text.length * MAX_BYTES_PER_UNIT;
    if (worstCase > RETAINED_SCRATCH_LIMIT) return encoder.encode(text);
    scratch = new Uint8Array(
      Math.min(
        RETAINED_SCRATCH_LIMIT,
        Math.max(worstCase, scratch.length * 2, INITIAL_SCRATCH_BYTES),
      ),
    );
    this.#scratch = scratch;
    return scratch.subarray(0, encoder.encodeInto(text, scratch).written);
  }

  decode(bytes: Uint8Array): T {
    try {
      let text = lenientDecoder.decode(bytes);
      if (text.includes("\uFFFD")) text = strictDecoder.decode(bytes);
      return JSON.parse(text);
    } catch (cause) {
      throw new CodecError(this.name, "decode", cause);
    }
  }

  #stringify(value: T): string {
    return jsonText(value, this.#lossy, this.name);
  }
}

/**
 * `value` as JSON text, with the JSON codec's checks: unless `lossy`, a value JSON would change
 * (a `Map`, `NaN`, a hole, …) is a `CodecError` naming its path, as is a value with no JSON
 * form. For wires that write JSON text themselves (JSON-RPC).
 *
 * @param value The value.
 * @param lossy Let JSON change values as `JSON.stringify` does.
 * @param codecName The codec name the error carries.
 * @returns The JSON text.
 *
 * @example A Map is refused, and let through as `{}` when lossy
 * ```ts
 * import { jsonText } from "@conduit/ipc/codecs/json";
 * import assert from "node:assert/strict";
 *
 * assert.equal(jsonText({ a: [1, "x"] }, false), '{"a":[1,"x"]}');
 * assert.throws(() => jsonText({ m: new Map() }, false), /\$\.m is an instance of Map/);
 * assert.equal(jsonText({ m: new Map() }, true), '{"m":{}}');
 * ```
 */
export function jsonText(value: unknown, lossy: boolean, codecName = JSON_CODEC_NAME): string {
  let text: string | undefined;
  try {
    if (!lossy) checkValue(value, "");
    text = JSON.stringify(value);
  } catch (cause) {
    throw new CodecError(codecName, "encode", explainLoss(value, cause));
  }
  if (text === undefined) {
    throw new CodecError(
      codecName,
      "encode",
      new TypeError(`A top-level ${typeof value} has no JSON representation`),
    );
  }
  return text;
}

/**
 * How a codec names an object key in the path of a value it refuses, as in
 * `$.items[3].callback`: `.name`, or `["odd key"]` when the key is no identifier. The JSON
 * and structured codecs build their error paths with it.
 *
 * @param key The object key.
 * @returns The key's path segment.
 *
 * @example
 * ```ts
 * import { keySegment } from "@conduit/ipc/codecs/json";
 * import assert from "node:assert/strict";
 *
 * assert.equal(keySegment("items"), ".items");
 * assert.equal(keySegment("odd key"), '["odd key"]');
 * ```
 */
export function keySegment(key: string): string {
  return IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** A value JSON would change, and the path to it, built innermost first while unwinding. */
class Loss {
  readonly segments: string[] = [];
  readonly reason: string;
  readonly verb: "is" | "has";
  // Plain fields, not parameter properties: Node's type stripping cannot erase those.
  constructor(reason: string, verb: "is" | "has" = "is") {
    this.reason = reason;
    this.verb = verb;
  }
}

const LOSSY_HINT = "jsonCodec({ lossy: true }) lets JSON change such values";

/** The cause to report: a {@linkcode Loss} as a `TypeError` naming its path. */
function explainLoss(value: unknown, cause: unknown): unknown {
  if (cause instanceof RangeError) {
    // The walk ran out of stack: a cycle, or a value deeper than the engine recurses.
    // `JSON.stringify` names a cycle; a value it can write is still too deep to check.
    try {
      JSON.stringify(value);
    } catch (err) {
      return err;
    }
    return new RangeError(`The value is nested too deeply to check; ${LOSSY_HINT}`);
  }
  if (!(cause instanceof Loss)) return cause;
  const path = `$${cause.segments.reverse().join("")}`;
  return new TypeError(`${path} ${cause.verb} ${cause.reason}; ${LOSSY_HINT}`);
}

/**
 * The key `JSON.stringify` passes a `toJSON()` method: the property name, an array index (a
 * number here, a string when passed), `""` at the top level; or {@linkcode RESULT} for what a
 * `toJSON()` returned, whose own `toJSON()` JSON does not call.
 */
type Key = string | number | typeof RESULT;
const RESULT: unique symbol = Symbol("toJSON result");
const dateToJSON = Date.prototype.toJSON;
type ToJSON = (this: unknown, key: string) => unknown;

/** Throws a {@linkcode Loss} where `JSON.stringify` would write `value` other than it is. */
function checkValue(value: unknown, key: Key): void {
  switch (typeof value) {
    case "string":
    case "boolean":
    case "undefined": // a missing property; at the top level, an error of its own
      return;
    case "number":
      if (Number.isFinite(value)) return;
      throw new Loss(`${value}, which JSON writes as null`);
    case "object":
      if (value !== null) checkObject(value, key);
      return;
    case "bigint": {
      const toJSON = (value as { toJSON?: unknown }).toJSON;
      if (key !== RESULT && typeof toJSON === "function") {
        return checkToJSON(value, toJSON as ToJSON, key);
      }
      throw new Loss(`a bigint (${value}n), which JSON cannot write`);
    }
    case "function":
      throw new Loss(`a function (${value.name || "anonymous"}), which JSON drops`);
    case "symbol":
      throw new Loss(`a symbol (${String(value)}), which JSON drops`);
  }
}

function checkObject(object: object, key: Key): void {
  const proto = Object.getPrototypeOf(object);
  if (proto === Array.prototype) return checkArray(object as unknown[]);
  if (proto === Object.prototype || proto === null) return checkRecord(object, key);
  const toJSON = key === RESULT ? undefined : (object as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") {
    return checkToJSON(object, toJSON as ToJSON, key as string | number);
  }
  throw new Loss(
    `${describeInstance(object, proto)}, which JSON writes as ${preview(object)} ` +
      "(convert it to a plain object or array, or give its class a toJSON() method)",
  );
}

/**
 * Checks what `JSON.stringify` writes in place of `holder`: what its `toJSON()` returns
 * (called here too, with the key JSON passes), except for a `Date`'s own method, whose string
 * only an invalid `Date` loses (as `null`).
 */
function checkToJSON(holder: unknown, toJSON: ToJSON, key: string | number): void {
  if (toJSON === (dateToJSON as ToJSON) && holder instanceof Date) {
    if (Number.isNaN(holder.getTime())) {
      throw new Loss("an invalid Date, which JSON writes as null");
    }
    return;
  }
  const result = toJSON.call(holder, typeof key === "number" ? String(key) : key);
  try {
    if (result === undefined) {
      // Left out of an object, as a property whose value is undefined; null in an array.
      if (typeof key === "number") throw new Loss("undefined, which JSON writes as null");
      return;
    }
    checkValue(result, RESULT);
  } catch (err) {
    if (err instanceof Loss) err.segments.push(".toJSON()");
    throw err;
  }
}

function checkRecord(record: object, key: Key): void {
  // `for...in` over a plain object sees its own keys (and enumerable ones an altered
  // Object.prototype adds, checked for nothing): faster than `Object.keys`.
  for (const name in record) {
    const value = (record as Record<string, unknown>)[name];
    if (typeof value === "string" || typeof value === "boolean") continue;
    try {
      checkValue(value, name);
    } catch (err) {
      // A plain object with a toJSON() method is written as what that returns: looked up only
      // here, as such objects are rare (and the method, a function, is a loss of its own).
      const toJSON = key === RESULT ? undefined : (record as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === "function") {
        return checkToJSON(record, toJSON as ToJSON, key as string | number);
      }
      if (err instanceof Loss) err.segments.push(keySegment(name));
      throw err;
    }
  }
  // JSON drops symbol keys; an enumerable one is data (spread and Object.assign copy it).
  const symbols = Object.getOwnPropertySymbols(record);
  for (let i = 0; i < symbols.length; i++) {
    if (!Object.prototype.propertyIsEnumerable.call(record, symbols[i])) continue;
    const toJSON = key === RESULT ? undefined : (record as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === "function") {
      return checkToJSON(record, toJSON as ToJSON, key as string | number);
    }
    throw new Loss(`a symbol key (${String(symbols[i])}), which JSON drops`, "has");
  }
}

function checkArray(array: unknown[]): void {
  for (let i = 0; i < array.length; i++) {
    const value = array[i];
    if (typeof value === "string" || typeof value === "boolean") continue;
    try {
      if (value === undefined) {
        throw new Loss(`${i in array ? "undefined" : "a hole"}, which JSON writes as null`);
      }
      checkValue(value, i);
    } catch (err) {
      if (err instanceof Loss) err.segments.push(`[${i}]`);
      throw err;
    }
  }
}

function describeInstance(object: object, proto: object): string {
  const name = (proto as { constructor?: { name?: unknown } }).constructor?.name;
  const kind = typeof name === "string" && name !== "" ? name : "an anonymous class";
  return object instanceof Error ? `an error (${kind})` : `an instance of ${kind}`;
}

/** What `JSON.stringify` would write for an object, cut short. */
function preview(object: object): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(object);
  } catch {
    return "a plain object";
  }
  if (text === undefined) return "nothing";
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}
