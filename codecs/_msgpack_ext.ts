/**
 * conduit's MessagePack extension values: {@linkcode ExtData}, the payloads of the types the
 * MessagePack codec gives meaning to, and the hooks by which records travel by shape.
 *
 * @module
 */

// The payloads of the MessagePack extension types conduit gives meaning to, apart from Map and
// Set (whose payloads are MessagePack documents): timestamps (type -1) and bigints (0x42).

import { integerOption } from "../_options.ts";

/**
 * A MessagePack extension value: its type (-128 to 127; negative types are reserved by the
 * MessagePack spec) and its payload. The MessagePack codec decodes an extension type it gives no
 * meaning to as one, and encodes one back unchanged.
 *
 * @example An application's own extension type, through the codec and back
 * ```ts
 * import { ExtData, msgpackCodec } from "@conduit/ipc/codecs/msgpack";
 * import assert from "node:assert/strict";
 *
 * const codec = msgpackCodec();
 * const point = new ExtData(7, new Uint8Array([1, 2]));
 * const back = codec.decode(codec.encode({ point })) as { point: ExtData };
 * assert.ok(back.point instanceof ExtData);
 * assert.equal(back.point.type, 7);
 * assert.deepEqual([...back.point.data], [1, 2]);
 * ```
 */
export class ExtData {
  /** The extension type, an integer from -128 to 127. */
  readonly type: number;
  /** The payload. */
  readonly data: Uint8Array;

  /**
   * An extension value of `type` holding `data`.
   *
   * @param type The extension type, an integer from -128 to 127.
   * @param data The payload.
   * @throws {RangeError} When `type` is not an integer from -128 to 127 (MessagePack has one
   * byte for it).
   * @throws {TypeError} When `data` is no `Uint8Array` (the bytes of a string or another view
   * would not be what is written).
   */
  constructor(type: number, data: Uint8Array) {
    this.type = integerOption("type", type, -128, 127);
    if (!(data instanceof Uint8Array)) {
      throw new TypeError(
        `ExtData data must be a Uint8Array, got ${Object.prototype.toString.call(data)}`,
      );
    }
    this.data = data;
  }
}

/**
 * The MessagePack timestamp payload (extension type -1) of `date`: 4 bytes (whole seconds from
 * 1970 up to 2106), 8 (with milliseconds, up to 2514) or 12 (any other instant), as the
 * MessagePack spec chooses them.
 */
export function encodeTimestamp(date: Date): Uint8Array {
  const ms = date.getTime();
  const seconds = Math.floor(ms / 1000);
  const nanoseconds = (ms - seconds * 1000) * 1_000_000;
  if (seconds >= 0 && seconds < 0x400000000) {
    if (nanoseconds === 0 && seconds < TWO_32) {
      const data = new Uint8Array(4);
      new DataView(data.buffer).setUint32(0, seconds);
      return data;
    }
    const data = new Uint8Array(8);
    const view = new DataView(data.buffer);
    // nanoseconds in the top 30 bits, seconds in the low 34.
    view.setUint32(0, nanoseconds * 4 + Math.floor(seconds / TWO_32));
    view.setUint32(4, seconds >>> 0);
    return data;
  }
  const data = new Uint8Array(12);
  const view = new DataView(data.buffer);
  view.setUint32(0, nanoseconds);
  view.setInt32(4, Math.floor(seconds / TWO_32));
  view.setUint32(8, seconds >>> 0);
  return data;
}

/** What decoding does with a timestamp that has a part finer than a millisecond. */
export type SubMillisecond = "error" | "truncate";

/** The largest magnitude of a `Date`'s time value, in milliseconds (ECMA-262 TimeClip). */
const MAX_DATE_MS = 8.64e15;
/** 2^32: the split of a 64-bit MessagePack int into two 32-bit words. */
export const TWO_32 = 4294967296;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/**
 * The `Date` a timestamp payload (4, 8 or 12 bytes) holds. A timestamp a `Date` cannot hold
 * exactly is a `RangeError` that names it: nanoseconds past 999999999, an instant outside
 * `Date`'s ±8.64e15 ms, or (with `subMillisecond: "error"`) a part finer than a millisecond,
 * which `"truncate"` rounds down to the millisecond instead.
 */
export function decodeTimestamp(data: Uint8Array, subMillisecond: SubMillisecond): Date {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let seconds: number;
  let nanoseconds: number;
  switch (data.length) {
    case 4:
      return new Date(view.getUint32(0) * 1000);
    case 8: {
      const high = view.getUint32(0);
      nanoseconds = high >>> 2;
      seconds = (high & 0x3) * TWO_32 + view.getUint32(4);
      break;
    }
    case 12:
      nanoseconds = view.getUint32(0);
      seconds = view.getInt32(4) * TWO_32 + view.getUint32(8);
      break;
    default:
      throw new TypeError(`A timestamp payload has 4, 8 or 12 bytes, not ${data.length}`);
  }
  const stated = () => `Timestamp ${seconds} s + ${nanoseconds} ns`;
  if (nanoseconds > 999_999_999) throw new RangeError(`${stated()}: nanoseconds past 999999999`);
  const subMs = nanoseconds % 1_000_000;
  if (subMs !== 0 && subMillisecond === "error") {
    throw new RangeError(
      `${stated()} has a part finer than a millisecond, which a Date cannot hold ` +
        `(decode with subMillisecond: "truncate" to drop it)`,
    );
  }
  const ms = seconds * 1000 + (nanoseconds - subMs) / 1_000_000;
  if (!(Math.abs(ms) <= MAX_DATE_MS)) {
    throw new RangeError(`${stated()} is outside the range of Date (±8.64e15 ms)`);
  }
  return new Date(ms);
}

/** A bigint as minimal big-endian two's complement bytes (at least one). */
export function bigintToBytes(value: bigint): Uint8Array {
  const negative = value < 0n;
  // ~value = -value - 1 turns a negative number into the magnitude its bytes invert.
  let hex = (negative ? ~value : value).toString(16);
  if (hex.length % 2 !== 0) hex = "0" + hex;
  if (parseInt(hex[0], 16) >= 8) hex = "00" + hex;
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    const byte = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
    bytes[i] = negative ? ~byte & 0xff : byte;
  }
  return bytes;
}

/** The bigint of big-endian two's complement bytes. */
export function bytesToBigint(bytes: Uint8Array): bigint {
  if (bytes.length === 0) throw new TypeError("A bigint payload needs at least one byte");
  const hex = new Array<string>(bytes.length);
  for (let i = 0; i < bytes.length; i++) hex[i] = HEX[bytes[i]];
  const value = BigInt("0x" + hex.join(""));
  return bytes[0] & 0x80 ? value - (1n << BigInt(bytes.length * 8)) : value;
}

/**
 * Records sent by shape (codecs/structured.ts, docs/protocol.md §14): a plain object of a shape is
 * the array `[mark, values…]`, its mark an extension value of type `type` holding the shape.
 */
export interface RecordHooks {
  /** The extension type of the marks. */
  readonly type: number;
  /** The writer's: the mark of the shape to write a plain object of these keys by, if any. */
  markOf?(keys: string[]): ExtData | undefined;
  /**
   * The reader's: the keys of the shape whose mark payload is `bytes[start, start + length)`
   * (read in place: no view made per record); throws when there is none.
   */
  keysOf(bytes: Uint8Array, start: number, length: number): readonly string[];
}

/** The method of conduit's MessagePack codec that sets its writers' and readers' hooks. */
export const SET_RECORD_HOOKS: unique symbol = Symbol("setRecordHooks");

/**
 * The method of conduit's MessagePack codec that encodes a value only if it can go as it is: the
 * structured codec's first pass, which returns `undefined` where that codec would change or
 * refuse something (see `MsgpackWriter.encodeAsIs`).
 */
export const ENCODE_AS_IS: unique symbol = Symbol("encodeAsIs");

/**
 * The method of conduit's MessagePack codec that returns the first {@linkcode ExtData} (an
 * extension type it gives no meaning to) its last decode made, if any: the structured codec
 * refuses one outside its own wrapper.
 */
export const FIRST_EXT_DATA: unique symbol = Symbol("firstExtData");
