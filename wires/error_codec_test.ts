import assert from "node:assert/strict";
import fc from "fast-check";
import { encodeErrorBody } from "./error_codec.ts";
import vectors from "../testdata/protocol/vectors.json" with { type: "json" };

const parse = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes));

Deno.test("encodeErrorBody drops as little as it must to fit maxBytes", () => {
  const error = Object.assign(new TypeError("short", { cause: new Error("why") }), {
    code: "E_X",
    data: { blob: "d".repeat(2000) },
  });
  error.stack = "s".repeat(2000);
  const whole = parse(encodeErrorBody(error, { stack: true }));
  assert.equal(whole.stack.length, 2000);
  // Without the stack it fits: data and cause are kept.
  const noStack = parse(encodeErrorBody(error, { stack: true, maxBytes: 2500 }));
  assert.equal(noStack.stack, undefined);
  assert.equal(noStack.data.blob.length, 2000);
  assert.equal(noStack.cause.message, "why");
  // Without the data too: the cause is kept.
  const noData = parse(encodeErrorBody(error, { stack: true, maxBytes: 500 }));
  assert.deepEqual(noData, {
    name: "TypeError",
    message: "short",
    code: "E_X",
    cause: { name: "Error", message: "why" },
  });
});

Deno.test("encodeErrorBody: a long message is cut with a mark; any error fits 1024 bytes", () => {
  const long = parse(encodeErrorBody(new Error("x".repeat(5000)), { maxBytes: 100 }));
  assert.match(long.message, /^x+…$/);
  assert.ok(long.message.length > 50, long.message);
  fc.assert(
    fc.property(fc.string({ maxLength: 3000 }), fc.string({ maxLength: 3000 }), (name, message) => {
      const error = Object.assign(new Error(message), { name, code: name, data: message });
      const body = encodeErrorBody(error, { stack: true, maxBytes: 992 });
      assert.ok(body.length <= 992, `${body.length}`);
      assert.equal(typeof parse(body).message, "string");
    }),
  );
  const escaped = encodeErrorBody({ name: "\u0000".repeat(1000), message: "m" }, {
    maxBytes: 992,
  });
  assert.ok(escaped.length <= 992);
});

for (const vector of vectors.errorFitting.cases) {
  Deno.test(`error_codec: §8 fitting vector ${vector.name}`, () => {
    const body = encodeErrorBody(structuredClone(vector.error), {
      stack: true,
      maxBytes: vector.room,
    });
    assert.equal(new TextDecoder().decode(body), vector.body);
    assert.ok(body.length <= vector.room);
  });
}

Deno.test("error_codec: fitting keeps a name and code that fit, and marks only a shortened message", () => {
  // Conduit once cut name and code to 200 characters and marked a whole message with "…".
  const error = {
    name: "N".repeat(300),
    message: "whole",
    code: "C".repeat(300),
    stack: "s".repeat(2000),
  };
  const body = JSON.parse(
    new TextDecoder().decode(encodeErrorBody(error, { stack: true, maxBytes: 1022 })),
  );
  assert.deepEqual(body, { name: error.name, message: "whole", code: error.code });
});
