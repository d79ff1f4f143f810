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
 * Creates a JSON codec. It keeps no state between messages, so one instance serves any
 * number of channels; the type parameter only types the values.
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

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

class _JsonCodec<T> implements Codec<T> {
  readonly name: string = JSON_CODEC_NAME;

  encode(value: T): Uint8Array {
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
    return encoder.encode(text);
  }

  decode(bytes: Uint8Array): T {
    try {
      return JSON.parse(decoder.decode(bytes));
    } catch (cause) {
      throw new CodecError(this.name, "decode", cause);
    }
  }
}
