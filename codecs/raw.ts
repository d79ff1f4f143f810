/**
 * The raw codec: bytes in, the same bytes out, for payloads that are already encoded.
 *
 * @example
 * ```ts
 * import { rawCodec } from "@conduit/ipc/codecs/raw";
 * import assert from "node:assert/strict";
 *
 * const payload = new Uint8Array([1, 2, 3]);
 * assert.equal(rawCodec.encode(payload), payload); // the same object: no copy
 * assert.equal(rawCodec.decode(payload), payload);
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
 * Passes a `Uint8Array` through untouched, in both directions: `encode` and `decode` return
 * the very object they are given, so the bytes are never copied. The caller owns them as
 * before, and a decoded value is a view over the frame it came in (keep the frame unchanged
 * while it is in use, or `slice()` it). Any byte string is valid, the empty one included; a
 * value that is not a `Uint8Array` is a `CodecError` on encode.
 *
 * @example
 * ```ts
 * import { rawCodec } from "@conduit/ipc/codecs/raw";
 * import assert from "node:assert/strict";
 *
 * assert.equal(rawCodec.name, "raw");
 * assert.deepEqual(rawCodec.decode(rawCodec.encode(new Uint8Array([9]))), new Uint8Array([9]));
 * ```
 */
export const rawCodec: Codec<Uint8Array> = {
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
};

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  return value.constructor?.name ?? "an object";
}
