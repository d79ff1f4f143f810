import assert from "node:assert/strict";
import { CLOSED, CLOSING, HANDSHAKE, Lifecycle, OPEN } from "./_lifecycle.ts";
import { ConnectionClosedError } from "./errors.ts";

Deno.test("lifecycle: only the transitions of the diagram happen", () => {
  const allowed = new Set([
    `${HANDSHAKE}>${OPEN}`,
    `${HANDSHAKE}>${CLOSED}`,
    `${OPEN}>${CLOSING}`,
    `${OPEN}>${CLOSED}`,
    `${CLOSING}>${CLOSED}`,
  ]);
  const path: Record<number, number[]> = {
    [HANDSHAKE]: [],
    [OPEN]: [OPEN],
    [CLOSING]: [OPEN, CLOSING],
    [CLOSED]: [CLOSED],
  };
  for (const from of [HANDSHAKE, OPEN, CLOSING, CLOSED]) {
    for (const to of [HANDSHAKE, OPEN, CLOSING, CLOSED]) {
      const life = new Lifecycle();
      for (const step of path[from]) assert.ok(life.enter(step));
      assert.equal(life.state, from);
      assert.equal(life.enter(to), allowed.has(`${from}>${to}`), `${from} -> ${to}`);
      assert.equal(life.state, allowed.has(`${from}>${to}`) ? to : from);
    }
  }
});

Deno.test("lifecycle: leaving OPEN ends the waits; a failure is kept; goodbye is said once", async () => {
  const life = new Lifecycle();
  life.enter(OPEN);
  let left = false;
  const waiting = life.leavesOpen().then(() => left = true);
  await Promise.resolve();
  assert.equal(left, false);
  assert.ok(life.sayGoodbye());
  assert.equal(life.sayGoodbye(), false);
  const failure = new ConnectionClosedError("gone");
  assert.ok(life.fail(failure));
  await waiting;
  assert.ok(left);
  assert.equal(life.failure, failure);
  assert.equal(life.fail(new ConnectionClosedError("again")), false);
  assert.equal(life.failure, failure);
});

Deno.test("lifecycle: the state's timer stops when the state is left", async () => {
  const life = new Lifecycle();
  let fired = false;
  life.startHandshake(setTimeout(() => fired = true, 0));
  life.enter(OPEN);
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(fired, false);
});
