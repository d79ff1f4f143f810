import assert from "node:assert/strict";
import fc from "fast-check";
import { encodeErrorBody } from "./error_codec.ts";

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
