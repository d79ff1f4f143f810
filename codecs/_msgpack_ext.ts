// The payloads of the MessagePack extension types conduit gives meaning to, apart from Map and
// Set (whose payloads are MessagePack documents): timestamps (type -1) and bigints (0x42).

/** What decoding does with a timestamp that has a part finer than a millisecond. */
export type SubMillisecond = "error" | "truncate";

/** The largest magnitude of a `Date`'s time value, in milliseconds (ECMA-262 TimeClip). */
const MAX_DATE_MS = 8.64e15;
const TWO_32 = 4294967296;
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
