import assert from "node:assert/strict";
import {
  CodecError,
  ConduitError,
  FrameTooLargeError,
  FramingError,
  TransportClosedError,
} from "./errors.ts";

// A second copy of this module, as a pre-built bundle or a second version of the package
// brings one: the same classes under other identities.
const other: typeof import("./errors.ts") = await import(
  new URL("./errors.ts?second-copy", import.meta.url).href
);

Deno.test("a second copy of the errors module has classes of its own", () => {
  assert.notEqual(other.FramingError, FramingError);
  assert.ok(!(Object.getPrototypeOf(new other.FramingError("x")) === FramingError.prototype));
});

Deno.test("an error from another copy of conduit is an instance of the class of its name", () => {
  const foreign = new other.FrameTooLargeError(10, 5);
  assert.ok(foreign instanceof FrameTooLargeError);
  assert.ok(foreign instanceof FramingError);
  assert.ok(foreign instanceof ConduitError);
  assert.ok(foreign instanceof Error);
  assert.ok(!(foreign instanceof TransportClosedError));
  assert.ok(!(foreign instanceof CodecError));
  // And the other way round.
  assert.ok(new FramingError("x") instanceof other.ConduitError);
  assert.ok(!(new FramingError("x") instanceof other.FrameTooLargeError));
});

Deno.test("instanceof narrows, and the fields of the twin are there", () => {
  const caught: unknown = new other.FrameTooLargeError(10, 5);
  if (!(caught instanceof FrameTooLargeError)) throw new Error("not recognized");
  assert.equal(caught.size, 10);
  assert.equal(caught.limit, 5);
});

Deno.test("only conduit's errors are recognized by name, and only with the whole lineage", () => {
  // Same name, not a conduit error.
  class FramingErrorLookalike extends Error {}
  Object.defineProperty(FramingErrorLookalike, "name", { value: "FramingError" });
  assert.ok(!(new FramingErrorLookalike("x") instanceof FramingError));
  // A class of the same name as one of conduit's, in another place of the tree (a user's).
  class Twin extends FramingError {}
  Object.defineProperty(Twin, "name", { value: "TransportClosedError" });
  assert.ok(new Twin("x") instanceof other.FramingError);
  assert.ok(!(new Twin("x") instanceof other.TransportClosedError));
  assert.ok(!(new other.TransportClosedError("x") instanceof Twin));
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
