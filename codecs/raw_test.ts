import assert from "node:assert/strict";
import { codecConformance } from "./_conformance.ts";
import { rawCodec } from "./raw.ts";

codecConformance<Uint8Array>({
  codec: rawCodec(),
  samples: [
    { name: "ascii", value: new TextEncoder().encode("hello") },
    { name: "bytes", value: new Uint8Array([0, 1, 2, 253, 254, 255]) },
    { name: "view at an offset", value: new Uint8Array(32).fill(5).subarray(3, 19) },
  ],
  empty: [new Uint8Array(0)],
  binary: (bytes) => bytes,
  large: () => new Uint8Array(16 * 1024 * 1024).fill(0xa5),
  // Every byte string is a valid raw value, so a prefix is simply a shorter value.
  truncated: "differs",
  unencodable: [
    { name: "string", value: "text" },
    { name: "ArrayBuffer", value: new ArrayBuffer(4) },
    { name: "number array", value: [1, 2, 3] },
    { name: "DataView", value: new DataView(new ArrayBuffer(2)) },
    { name: "null", value: null },
  ],
});

Deno.test("codec/raw: encode and decode return the same object, never a copy", () => {
  const buffer = new Uint8Array(16);
  const view = buffer.subarray(4, 8);
  assert.equal(rawCodec().encode(view), view);
  assert.equal(rawCodec().decode(view), view);
  assert.equal(rawCodec().decode(view).buffer, buffer.buffer);
  assert.equal(rawCodec().decode(view).byteOffset, 4);
});
