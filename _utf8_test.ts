import assert from "node:assert/strict";
import fc from "fast-check";
import { fittedText, utf8Length } from "./_utf8.ts";

const utf8 = new TextEncoder();

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

Deno.test("fittedText: the fitting search finds the longest whole-code-point start, as a plain scan does", () => {
  const naive = (text: string, mark: string, fits: (s: string) => boolean): string => {
    const points = [...text];
    for (let n = points.length - 1; n >= 0; n--) {
      const candidate = points.slice(0, n).join("") + mark;
      if (fits(candidate)) return candidate;
    }
    return "";
  };
  fc.assert(
    fc.property(
      fc.string({ unit: fc.constantFrom("a", "é", "\u{1f600}", "\ud800", "\udc00", '"') }),
      fc.nat({ max: 80 }),
      fc.constantFrom("…", ""),
      (text, room, mark) => {
        const fits = (s: string) => utf8.encode(JSON.stringify(s)).length <= room;
        assert.equal(fittedText(text, mark, fits, room), naive(text, mark, fits));
      },
    ),
    { numRuns: 2000 },
  );
});
