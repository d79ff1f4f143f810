/**
 * The JSON codec: values as UTF-8 JSON text (RFC 8259), with no dependencies.
 *
 * What does not survive a round trip, because JSON has no way to say it:
 *
 * | value | comes back as |
 * | --- | --- |
 * | `Date` | its ISO string (through `Date.prototype.toJSON`) |
 * | `Map`, `Set` | `{}` |
 * | `Uint8Array` (any typed array) | an object of index keys, `{ "0": 1, "1": 2 }` |
 * | `bigint` | nothing: encode throws `CodecError` |
 * | `undefined`, functions, symbols | dropped from objects, `null` in arrays, `CodecError` at the top level |
 * | `NaN`, `Infinity`, `-Infinity` | `null` |
 * | `-0` | `0` |
 * | class instances | plain objects of their own enumerable properties (or their `toJSON()`) |
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

/**
 * Creates a JSON codec. Its only state is the scratch buffer behind
 * {@linkcode Codec.encodeView}, so one instance serves any number of channels as long as each
 * view is used before the next call; the type parameter only types the values.
 *
 * @typeParam T The values this codec carries.
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
 * ```
 */
export function jsonCodec<T = unknown>(): Codec<T> {
  return new _JsonCodec<T>();
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
  #scratch: Uint8Array = NO_SCRATCH;

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
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch (cause) {
      throw new CodecError(this.name, "encode", cause);
    }
    if (text === undefined) {
      throw new CodecError(
        this.name,
        "encode",
        new TypeError(`A top-level ${typeof value} has no JSON representation`),
      );
    }
    return text;
  }
}
