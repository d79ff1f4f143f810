/**
 * The codec contract: a value to bytes and back, pure and synchronous.
 *
 * @module
 */

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
