import assert from "node:assert/strict";
import { ConnectionClosedError, DrainTimeoutError } from "../channel/errors.ts";
import { causeChain, drainCutReason } from "./_worker_channel.ts";

Deno.test("causeChain: an error and its causes, and an end even when they loop", () => {
  const inner = new Error("inner");
  const outer = new ConnectionClosedError("outer", { cause: inner });
  assert.deepEqual([...causeChain(outer)], [outer, inner]);
  assert.deepEqual([...causeChain("not an error")], []);
  // A reason given to abort() is the user's, and may be its own cause.
  const looping = new Error("looping");
  looping.cause = looping;
  assert.equal([...causeChain(new ConnectionClosedError("aborted", { cause: looping }))].length, 8);
});

Deno.test("drainCutReason: only a DrainTimeoutError in the chain is a cut", () => {
  const cut = new DrainTimeoutError(200);
  assert.equal(drainCutReason(new ConnectionClosedError("x", { cause: cut })), cut.message);
  assert.equal(
    drainCutReason(new ConnectionClosedError("The peer closed the connection")),
    undefined,
  );
});
