/**
 * The structured codec's extension types and the values behind them: marks, typed array kinds,
 * and the payloads of `undefined`, `-0`, invalid Dates, unpaired surrogates and views.
 *
 * @module
 */

import { ExtData } from "./_msgpack_ext.ts";

/**
 * The MessagePack extension types this codec adds (each payload is described beside it).
 *
 * @example
 * ```ts
 * import { STRUCTURED_EXT, structuredCodec } from "@conduit/ipc/codecs/structured";
 * import assert from "node:assert/strict";
 *
 * // [ext R, ext U]: a message that needs reviving, holding `undefined`.
 * const bytes = structuredCodec().encode(undefined);
 * assert.deepEqual([...bytes], [0x92, 0xc7, 0, STRUCTURED_EXT.revive, 0xc7, 0, STRUCTURED_EXT.undefined]);
 * ```
 */
export const STRUCTURED_EXT: {
  /** `0x52` ("R"), empty: the first item of a message whose value holds the others. */
  readonly revive: number;
  /** `0x55` ("U"), empty: `undefined`. */
  readonly undefined: number;
  /** `0x5a` ("Z"), empty: `-0`. */
  readonly negativeZero: number;
  /** `0x49` ("I"), empty: an invalid `Date`. */
  readonly invalidDate: number;
  /** `0x53` ("S"): a string with unpaired surrogates, as its UTF-16 code units (little-endian). */
  readonly wtf16: number;
  /** `0x54` ("T"): a typed array, `DataView` or `ArrayBuffer`: one kind byte (see the source's
   * `VIEW_KINDS`), then the bytes. */
  readonly typed: number;
  /** `0x45` ("E"), empty: the first item of `[ext E, { name, message, code?, data?, stack?,
   * cause? }]`, an error. */
  readonly error: number;
  /** `0x4e` ("N"), empty: the first item of `[ext N, record]`, an object with a `null`
   * prototype. */
  readonly nullPrototype: number;
} = Object.freeze({
  revive: 0x52,
  undefined: 0x55,
  negativeZero: 0x5a,
  invalidDate: 0x49,
  wtf16: 0x53,
  typed: 0x54,
  error: 0x45,
  nullPrototype: 0x4e,
});

/** A kind of view in a {@linkcode STRUCTURED_EXT.typed} payload; its index is its kind byte. */
interface ViewKind {
  name: string;
  proto: object;
  make(buffer: ArrayBuffer): ArrayBufferView | ArrayBuffer;
}

type TypedArrayClass = new (buffer: ArrayBuffer) => ArrayBufferView;

/** The kinds, in kind-byte order. Float16Array is last of the typed arrays: not every Deno
 * has it, and a peer without it refuses the kind rather than misread another. */
const VIEW_KINDS: readonly ViewKind[] = [
  ...([
    ["Int8Array", Int8Array],
    ["Uint8ClampedArray", Uint8ClampedArray],
    ["Int16Array", Int16Array],
    ["Uint16Array", Uint16Array],
    ["Int32Array", Int32Array],
    ["Uint32Array", Uint32Array],
    ["Float32Array", Float32Array],
    ["Float64Array", Float64Array],
    ["BigInt64Array", BigInt64Array],
    ["BigUint64Array", BigUint64Array],
  ] as Array<[string, TypedArrayClass]>).map(([name, cls]) => typedKind(name, cls)),
  { name: "DataView", proto: DataView.prototype, make: (buffer) => new DataView(buffer) },
  { name: "ArrayBuffer", proto: ArrayBuffer.prototype, make: (buffer) => buffer },
  typedKind("Float16Array", (globalThis as { Float16Array?: TypedArrayClass }).Float16Array),
];

function typedKind(name: string, cls: TypedArrayClass | undefined): ViewKind {
  if (cls === undefined) {
    return {
      name,
      proto: Object.create(null),
      make: () => {
        throw new TypeError(`This runtime has no ${name}`);
      },
    };
  }
  return { name, proto: cls.prototype, make: (buffer) => new cls(buffer) };
}

export const KIND_OF = new Map<object, number>(VIEW_KINDS.map((kind, i) => [kind.proto, i]));

const mark = (type: number): ExtData => Object.freeze(new ExtData(type, new Uint8Array(0)));
export const REVIVE = mark(STRUCTURED_EXT.revive);
export const UNDEFINED = mark(STRUCTURED_EXT.undefined);
export const NEGATIVE_ZERO = mark(STRUCTURED_EXT.negativeZero);
export const INVALID_DATE = mark(STRUCTURED_EXT.invalidDate);
export const ERROR = mark(STRUCTURED_EXT.error);
export const NULL_PROTOTYPE = mark(STRUCTURED_EXT.nullPrototype);

export function isMark(value: unknown, which: ExtData): boolean {
  return value instanceof ExtData && value.type === which.type && value.data.length === 0;
}

export function reviveExt(ext: ExtData): unknown {
  const data = ext.data as Uint8Array;
  switch (ext.type) {
    case STRUCTURED_EXT.undefined:
      return undefined;
    case STRUCTURED_EXT.negativeZero:
      return -0;
    case STRUCTURED_EXT.invalidDate:
      return new Date(NaN);
    case STRUCTURED_EXT.wtf16: {
      if (data.length % 2 !== 0) throw new TypeError("A UTF-16 payload has an odd length");
      const units = new Uint16Array(data.length / 2);
      new Uint8Array(units.buffer).set(data);
      let text = "";
      for (let i = 0; i < units.length; i += 8192) {
        text += String.fromCharCode(...units.subarray(i, i + 8192));
      }
      return text;
    }
    case STRUCTURED_EXT.typed: {
      const kind = VIEW_KINDS[data[0]];
      if (data.length === 0 || kind === undefined) {
        throw new TypeError(`Unknown typed array kind ${data[0]}`);
      }
      const buffer = new ArrayBuffer(data.length - 1);
      new Uint8Array(buffer).set(data.subarray(1));
      try {
        return kind.make(buffer);
      } catch (cause) {
        throw new TypeError(`${data.length - 1} bytes do not hold whole ${kind.name} items`, {
          cause,
        });
      }
    }
    default:
      throw unknownExt(ext);
  }
}

export function unknownExt(ext: ExtData): TypeError {
  return new TypeError(`Unknown extension type ${ext.type}`);
}

export function typedExt(kind: number, view: ArrayBufferView | ArrayBuffer): ExtData {
  const bytes = ArrayBuffer.isView(view)
    ? new Uint8Array(view.buffer, view.byteOffset, view.byteLength)
    : new Uint8Array(view);
  const payload = new Uint8Array(bytes.length + 1);
  payload[0] = kind;
  payload.set(bytes, 1);
  return new ExtData(STRUCTURED_EXT.typed, payload);
}

export function wtf16(text: string): ExtData {
  const units = new Uint16Array(text.length);
  for (let i = 0; i < text.length; i++) units[i] = text.charCodeAt(i);
  return new ExtData(STRUCTURED_EXT.wtf16, new Uint8Array(units.buffer));
}
