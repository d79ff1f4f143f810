/**
 * The cross-implementation MessagePack table (interop/codecs_msgpack_test.ts): what conduit
 * must read from the bytes Python's `msgpack` writes (interop/codecs/msgpack_table.py
 * `write`), and the values conduit writes for Python to check (`check`). Every case reads
 * back exactly or is refused with a `CodecError` whose message names the problem.
 *
 * @module
 */

import { ExtData } from "../codecs/msgpack.ts";

/** A case conduit must refuse: a `CodecError` whose message matches. */
export class Refused {
  /** What the error message must say. */
  readonly message: RegExp;
  /** @param message What the error message must say. */
  constructor(message: RegExp) {
    this.message = message;
  }
}

const nested = (depth: number): unknown => {
  let value: unknown = 0;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
};

/** What conduit's default msgpack codec must give for each case Python wrote. */
export const FROM_PYTHON: Record<string, unknown> = {
  "nil": null,
  "true": true,
  "false": false,
  "int 0": 0,
  "int 127": 127,
  "int 128": 128,
  "int 255": 255,
  "int 256": 256,
  "int 65535": 65535,
  "int 65536": 65536,
  "int 2^32-1": 2 ** 32 - 1,
  "int 2^32": 2 ** 32,
  "int -1": -1,
  "int -32": -32,
  "int -33": -33,
  "int -128": -128,
  "int -129": -129,
  "int -2^31": -(2 ** 31),
  "int -2^31-1": -(2 ** 31) - 1,
  "int 2^53-1": 2 ** 53 - 1,
  "int 2^53": 2n ** 53n,
  "int 2^53+1": 2n ** 53n + 1n,
  "int 2^63-1": 2n ** 63n - 1n,
  "int 2^64-1": 2n ** 64n - 1n,
  "int -(2^53-1)": -(2 ** 53 - 1),
  "int -2^53": -(2n ** 53n),
  "int -2^53-1": -(2n ** 53n) - 1n,
  "int -2^63": -(2n ** 63n),
  "float 0.1": 0.1,
  "float32 1.5": 1.5,
  "float nan": NaN,
  "float -inf": -Infinity,
  "str": "héllo 𝄞",
  "str empty": "",
  "str 300 bytes": "é".repeat(150),
  "bin": new Uint8Array([0x00, 0xff]),
  "array": [1, "a", null],
  "map str keys": { a: 1, b: [2] },
  "map int keys": new Map<unknown, unknown>([[1, "one"], [2, "two"]]),
  "map mixed keys": new Map<unknown, unknown>([["a", 1], [2, "b"]]),
  "map tuple key": new Map<unknown, unknown>([[[1, 2], "t"]]),
  "map bytes key": new Map<unknown, unknown>([[new Uint8Array([0x6b]), 1]]),
  "map bool and nil keys": new Map<unknown, unknown>([[true, 1], [null, 2]]),
  "map float key": new Map<unknown, unknown>([[1.5, "x"]]),
  "str invalid UTF-8": new Refused(/Invalid UTF-8 in a string at byte 2/),
  "str overlong UTF-8": new Refused(/Invalid UTF-8 in a string at byte 1/),
  "str encoded surrogate": new Refused(/Invalid UTF-8 in a string at byte 1/),
  "str invalid UTF-8, 300 bytes": new Refused(/Invalid UTF-8 in a string at byte 302/),
  "map key invalid UTF-8": new Refused(/Invalid UTF-8 in a string at byte 2/),
  "timestamp 0": new Date(0),
  "timestamp ms": new Date(1_700_000_000_123),
  "timestamp before 1970": new Date(-500),
  "timestamp Date max": new Date(8.64e15),
  "timestamp Date min": new Date(-8.64e15),
  "timestamp past Date max": new Refused(/Timestamp 8640000000001 s \+ 0 ns is outside the range/),
  "timestamp before Date min": new Refused(/Timestamp -8640000000001 s \+ 0 ns is outside/),
  "timestamp ns": new Refused(/Timestamp 1700000000 s \+ 123456789 ns has a part finer than a/),
  "datetime ms": new Date("2024-05-06T07:08:09.010Z"),
  "datetime us": new Refused(/Timestamp 1714979289 s \+ 10001000 ns has a part finer/),
  "ext 5": new ExtData(5, new Uint8Array([0x78, 0x79])),
  "nested 50": nested(50),
  "ext: int 2^70": 2n ** 70n,
  "ext: int -2^64": -(2n ** 64n),
  "ext: set": new Set([1, 2, 3]),
  "ext: frozenset in list": [new Set(["x"])],
};

/** What conduit writes for Python's check; `bigint: "int"` cases use that option. */
export const TO_PYTHON: Record<string, { value: unknown; bigintAsInt?: boolean }> = {
  "null": { value: null },
  "true": { value: true },
  "zero": { value: 0 },
  "safe max": { value: 2 ** 53 - 1 },
  "int -2^31": { value: -(2 ** 31) },
  "float": { value: 0.5 },
  "str": { value: "héllo 𝄞" },
  "str empty": { value: "" },
  "bytes": { value: new Uint8Array([0x00, 0xff]) },
  "array": { value: [1, "a", null] },
  "object": { value: { a: 1, b: { c: [true] } } },
  "__proto__ key": { value: JSON.parse('{"__proto__":1}') },
  "Map": { value: new Map<unknown, unknown>([[1, "one"], ["k", [2]]]) },
  "Map with array key": { value: new Map<unknown, unknown>([[[1, 2], "t"]]) },
  "Set": { value: new Set([1, "a"]) },
  "bigint 5": { value: 5n },
  "bigint 2^64": { value: 2n ** 64n },
  "bigint -2^70": { value: -(2n ** 70n) },
  "bigint 2^53+1": { value: 2n ** 53n + 1n },
  "bigint -2^63": { value: -(2n ** 63n) },
  "bigint as int 5": { value: 5n, bigintAsInt: true },
  "bigint as int 2^63": { value: 2n ** 63n, bigintAsInt: true },
  "Date 0": { value: new Date(0) },
  "Date before 1970": { value: new Date(-500) },
  "Date ms": { value: new Date(1_700_000_000_123) },
  "Date 9999": { value: new Date("9999-12-31T23:59:59.999Z") },
  "Date max": { value: new Date(8.64e15) },
  "ExtData 5": { value: new ExtData(5, new Uint8Array([1])) },
  "nested Map in object": { value: { m: new Map([["k", new Set([5])]]) } },
};
