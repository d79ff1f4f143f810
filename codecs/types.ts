/**
 * The codec contract: a value to bytes and back, pure and synchronous.
 *
 * @module
 */

import type { ShapeDecoder, ShapeEncoder } from "./shapes.ts";

/**
 * Turns values of type `T` into bytes and back. Implementations are pure, synchronous and
 * reusable: one instance may serve many messages (and keeps its scratch buffers between
 * them). `decode` failures throw `CodecError`, which names the codec and wraps the cause.
 *
 * @typeParam T The values this codec represents.
 *
 * @example A codec of your own
 * ```ts
 * import type { Codec } from "@conduit/ipc/codecs";
 * import assert from "node:assert/strict";
 *
 * const text: Codec<string> = {
 *   name: "utf8",
 *   encode: (value) => new TextEncoder().encode(value),
 *   decode: (bytes) => new TextDecoder().decode(bytes),
 * };
 * assert.equal(text.decode(text.encode("héllo")), "héllo");
 * ```
 */
export interface Codec<T = unknown> {
  /**
   * A stable name for the wire format (`"json"`, `"msgpack"`, …). Peers compare it in the
   * handshake to detect a codec mismatch.
   */
  readonly name: string;
  /** Encodes one value. The returned bytes belong to the caller (the codec keeps no
   * reference to them). Throws `CodecError` for a value the format cannot represent. */
  encode(value: T): Uint8Array;
  /**
   * Optional: encodes one value like {@linkcode Codec.encode}, but the bytes may be a view
   * of the codec's own scratch memory, valid only until the next call of any method of this
   * codec. A channel that copies every encoding into its write batch at once calls this
   * instead of `encode`, saving one buffer per message; it copies the view itself when it
   * must keep the bytes longer. Throws `CodecError` like `encode`.
   */
  encodeView?(value: T): Uint8Array;
  /** Decodes one value from exactly these bytes. Throws `CodecError` for bytes that are not
   * one valid value. The result may be a view over `bytes` (raw, Arrow): keep `bytes`
   * unchanged while the result is in use. */
  decode(bytes: Uint8Array): T;
}

/**
 * A codec that can send records by shape: {@linkcode Codec} plus an encode and a decode
 * through a direction's shape table. Without the tables it is the plain codec, and a body
 * encoded with a table decodes only with the peer's table of that direction.
 *
 * @typeParam T The values this codec represents.
 *
 * @example
 * ```ts
 * import { isShapingCodec } from "@conduit/ipc/codecs";
 * import { structuredCodec } from "@conduit/ipc/codecs/structured";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import assert from "node:assert/strict";
 *
 * assert.equal(isShapingCodec(structuredCodec()), true);
 * assert.equal(isShapingCodec(jsonCodec()), false);
 * ```
 */
export interface ShapingCodec<T = unknown> extends Codec<T> {
  /**
   * Encodes `value`, asking `shapes` for its records' shapes; afterwards
   * `shapes.uncommitted()` lists the definitions the body needs sent first. The bytes may be
   * a view of the codec's scratch memory, as {@linkcode Codec.encodeView}'s.
   */
  encodeShaped(value: T, shapes: ShapeEncoder): Uint8Array;
  /** Decodes a body encoded by `encodeShaped`, with the shapes the peer defined. A shape
   * never defined is a `CodecError` whose cause is a {@linkcode ShapeError}. */
  decodeShaped(bytes: Uint8Array, shapes: ShapeDecoder): T;
}

/**
 * Whether `codec` implements {@linkcode ShapingCodec}.
 *
 * @example
 * ```ts
 * import { isShapingCodec } from "@conduit/ipc/codecs";
 * import { rawCodec } from "@conduit/ipc/codecs/raw";
 * import assert from "node:assert/strict";
 *
 * assert.equal(isShapingCodec(rawCodec()), false);
 * ```
 */
export function isShapingCodec<T>(codec: Codec<T>): codec is ShapingCodec<T> {
  const shaping = codec as Partial<ShapingCodec<T>>;
  return typeof shaping.encodeShaped === "function" && typeof shaping.decodeShaped === "function";
}
