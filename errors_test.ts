import assert from "node:assert/strict";
import {
  CodecError,
  ConduitError,
  FrameTooLargeError,
  FramingError,
  TransportClosedError,
} from "./errors.ts";

Deno.test("an error is an instance of its class and its bases, and of no sibling", () => {
  const err = new FrameTooLargeError(10, 5);
  assert.ok(err instanceof FrameTooLargeError);
  assert.ok(err instanceof FramingError);
  assert.ok(err instanceof ConduitError);
  assert.ok(err instanceof Error);
  assert.ok(!(err instanceof TransportClosedError));
  assert.ok(!(err instanceof CodecError));
  assert.ok(!(new FramingError("x") instanceof FrameTooLargeError));
  assert.equal(err.name, "FrameTooLargeError");
});

Deno.test("a class of the same name is not one of conduit's", () => {
  class FramingErrorLookalike extends Error {}
  Object.defineProperty(FramingErrorLookalike, "name", { value: "FramingError" });
  assert.ok(!(new FramingErrorLookalike("x") instanceof FramingError));
  for (const value of [null, undefined, 1, "FramingError", {}, Object.create(null)]) {
    assert.ok(!(value instanceof ConduitError));
  }
});

Deno.test("a user's subclass stays an ordinary class", () => {
  class QuotaExceeded extends ConduitError {}
  const err = new QuotaExceeded("over");
  assert.ok(err instanceof QuotaExceeded);
  assert.ok(err instanceof ConduitError);
  assert.equal(err.name, "QuotaExceeded");
  assert.ok(!(new ConduitError("x") instanceof QuotaExceeded));
});
