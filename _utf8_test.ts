import assert from "node:assert/strict";
import fc from "fast-check";
import { utf8Length } from "./_utf8.ts";

Deno.test("utf8Length: the length TextEncoder writes, lone surrogates included", () => {
  const encoder = new TextEncoder();
  for (const text of ["", "a", "é", "€", "😀", "\uD800", "\uDC00", "a\uD800b", "\uDC00\uD800"]) {
    assert.equal(utf8Length(text), encoder.encode(text).length, JSON.stringify(text));
  }
  fc.assert(
    fc.property(fc.string({ unit: "binary" }), (text) => {
      assert.equal(utf8Length(text), encoder.encode(text).length);
    }),
    { numRuns: 2000 },
  );
});
