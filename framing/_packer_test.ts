import assert from "node:assert/strict";
import fc from "fast-check";
import { findByte } from "./_packer.ts";

Deno.test("findByte: agrees with indexOf at any offset, length and alignment", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 1200 }).map((bytes) => bytes.map((b) => b % 4 === 0 ? b : 7)),
      fc.nat(7),
      fc.nat(1300),
      fc.constantFrom(0, 4, 7, 0x80, 0xff),
      (bytes, shift, from, byte) => {
        const view = bytes.subarray(Math.min(shift, bytes.length));
        assert.equal(findByte(view, byte, from), view.indexOf(byte, from));
      },
    ),
    { numRuns: 2000 },
  );
});

Deno.test("findByte: finds a byte in every position of a long range", () => {
  const bytes = new Uint8Array(1030).fill(0x61);
  for (let at = 0; at < bytes.length; at++) {
    bytes[at] = 0x0a;
    assert.equal(
      findByte(bytes.subarray(1), 0x0a),
      at - 1 < 0 ? bytes.subarray(1).indexOf(0x0a) : at - 1,
    );
    assert.equal(findByte(bytes, 0x0a), at);
    bytes[at] = 0x61;
  }
});
