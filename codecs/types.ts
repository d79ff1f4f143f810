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

/**
 * A codec that can send records by shape: {@linkcode Codec} plus an encode and a decode
 * through a direction's shape table. Without the tables it is the plain codec, and a body
 * encoded with a table decodes only with the peer's table of that direction.
 *
 * @typeParam T The values this codec represents.
 *
 * @example The two ends of one direction of a channel
 * ```ts
 * import type { ShapingCodec } from "@conduit/ipc/codecs";
 * import { structuredCodec } from "@conduit/ipc/codecs/structured";
 * import assert from "node:assert/strict";
 *
 * const codec: ShapingCodec = structuredCodec();
 * const sending = codec.shapeEncoder();
 * const receiving = codec.shapeDecoder();
 * const send = (value: unknown): Uint8Array => {
 *   const body = codec.encodeShaped(value, sending).slice();
 *   // The definitions a body needs go first, once: conduit writes them as SHAPE frames.
 *   for (const shape of sending.uncommitted()) {
 *     if (sending.commit(shape)) receiving.define(shape.id, shape.keys);
 *   }
 *   return body;
 * };
 * const rows = [{ id: 1, name: "a" }, { id: 2, name: "b" }, { id: 3, name: "c" }];
 * const first = send(rows);
 * const second = send(rows);
 * assert.ok(second.length < first.length);
 * assert.deepStrictEqual(codec.decodeShaped(second, receiving), rows);
 * ```
 */
export interface ShapingCodec<T = unknown> extends Codec<T> {
  /** A new table for the sending side of one direction (any shaping codec's tables serve
   * every shaping codec). */
  shapeEncoder(options?: ShapeEncoderOptions): ShapeEncoderTable;
  /** A new table for the receiving side of one direction, enforcing `limits` (by default
   * the same defaults a sending side keeps to). */
  shapeDecoder(limits?: Partial<ShapeLimits>): ShapeDecoderTable;
  /**
   * Encodes `value`, asking `shapes` for its records' shapes; afterwards
   * `shapes.uncommitted()` lists the definitions the body needs sent first. The bytes may be
   * a view of the codec's scratch memory, as {@linkcode Codec.encodeView}'s.
   */
  encodeShaped(value: T, shapes: ShapeEncoderTable): Uint8Array;
  /** Decodes a body encoded by `encodeShaped`, with the shapes the peer defined. A shape
   * never defined is a `CodecError` whose cause is a `ShapeError`. */
  decodeShaped(bytes: Uint8Array, shapes: ShapeDecoderTable): T;
}

/** The bounds of one direction's shape table; the receiving side enforces them. */
export interface ShapeLimits {
  /** Shapes one direction may define. @default {1024} */
  readonly maxShapes: number;
  /** Keys one shape may have. @default {64} */
  readonly maxKeysPerShape: number;
  /** UTF-8 bytes one key may take. @default {128} */
  readonly maxKeyBytes: number;
  /** UTF-8 bytes of all keys of all shapes of one direction, together. @default {65536} */
  readonly maxTableBytes: number;
}

/** Options of a sending side's shape table ({@linkcode ShapingCodec.shapeEncoder}). */
export interface ShapeEncoderOptions extends Partial<ShapeLimits> {
  /**
   * The peer's `maxFrameBytes`: no shape is made whose SHAPE frame (docs/protocol.md §14)
   * would be larger.
   *
   * @default {Infinity}
   */
  readonly maxFrameBytes?: number;
}

/** A record shape of one direction: its id and its keys, in order. */
export interface RecordShape {
  /** The shape's id in its direction's table. */
  readonly id: number;
  /** The keys, in order. */
  readonly keys: readonly string[];
}

/**
 * The sending side of one direction's shape table, as a {@linkcode ShapingCodec} uses it
 * (conduit's: `ShapeEncoder` of `@conduit/ipc/codecs/structured`).
 */
export interface ShapeEncoderTable {
  /**
   * Called by a codec before each encode: `uncommitted` then lists that encode's shapes.
   * `again` when the last encode's value is encoded once more (a second, careful pass): the
   * records the last pass met are not met twice.
   */
  startEncode(again?: boolean): void;
  /** The shape to write a record of these keys by, or `undefined` to write its keys. */
  shapeOf(keys: readonly string[]): RecordShape | undefined;
  /** The shapes the last encode used whose definitions were never sent. */
  uncommitted(): readonly RecordShape[];
  /** Marks a shape's definition sent; true when it was not sent before (send it now). */
  commit(shape: RecordShape): boolean;
}

/**
 * The receiving side of one direction's shape table (conduit's: `ShapeDecoder` of
 * `@conduit/ipc/codecs/structured`).
 */
export interface ShapeDecoderTable {
  /**
   * Throws `ShapeError` when shape `id` may not have `count` keys, or a key of
   * `longestKeyBytes`, as `define` would: the wire asks before it decodes a SHAPE frame's keys,
   * so a hostile count or length costs nothing (optional).
   */
  checkKeyCount?(id: number, count: number, longestKeyBytes?: number): void;
  /** Adds the peer's shape `id`; throws `ShapeError` past a limit. */
  define(id: number, keys: readonly string[]): void;
  /** The keys of shape `id`; throws `ShapeError` for a shape never defined. */
  keysOf(id: number): readonly string[];
}
