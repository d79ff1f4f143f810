/**
 * The raw codec: bytes in, the same bytes out, for payloads that are already encoded.
 *
 * @example
 * ```ts
 * import { rawCodec } from "@conduit/ipc/codecs/raw";
 * import assert from "node:assert/strict";
 *
 * const codec = rawCodec();
 * const payload = new Uint8Array([1, 2, 3]);
 * assert.equal(codec.encode(payload), payload); // the same object: no copy
 * assert.equal(codec.decode(payload), payload);
 * ```
 *
 * @module
 */

import { CodecError } from "../errors.ts";
import type { Codec } from "./types.ts";

export type { Codec };

/** The codec's `name` on the wire: `"raw"`. */
export const RAW_CODEC_NAME = "raw";

/**
 * The raw codec, a factory like every other codec (it returns one shared, stateless instance):
 * passes a `Uint8Array` through untouched, in both directions. `encode` and `decode` return the
 * very object they are given, so the bytes are never copied. The caller owns them as
 * before, and a decoded value is a view over the frame it came in (keep the frame unchanged
 * while it is in use, or `slice()` it). Any byte string is valid, the empty one included; a
 * value that is not a `Uint8Array` is a `CodecError` on encode.
 *
 * @example
 * ```ts
 * import { rawCodec } from "@conduit/ipc/codecs/raw";
 * import assert from "node:assert/strict";
 *
 * const codec = rawCodec();
 * assert.equal(codec.name, "raw");
 * assert.equal(rawCodec(), codec); // stateless: every call returns the same instance
 * assert.deepEqual(codec.decode(codec.encode(new Uint8Array([9]))), new Uint8Array([9]));
 * ```
 */
export function rawCodec(): Codec<Uint8Array> {
  return RAW_CODEC;
}

const RAW_CODEC: Codec<Uint8Array> = Object.freeze({
  name: RAW_CODEC_NAME,
  encode(value: Uint8Array): Uint8Array {
    if (!(value instanceof Uint8Array)) {
      throw new CodecError(
        RAW_CODEC_NAME,
        "encode",
        new TypeError(`The raw codec carries Uint8Array values, not ${describe(value)}`),
      );
    }
    return value;
  },
  decode(bytes: Uint8Array): Uint8Array {
    return bytes;
  },
});

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  return value.constructor?.name ?? "an object";
}
