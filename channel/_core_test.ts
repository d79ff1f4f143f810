import assert from "node:assert/strict";
import { CLOSED, CLOSING, HANDSHAKE, Lifecycle, OPEN } from "./_lifecycle.ts";
import { ConnectionClosedError, DrainTimeoutError } from "./errors.ts";
import { openChannel } from "./channel.ts";
import { memoryPair } from "../transports/memory.ts";
import { fireAt, MAX_TIMER_DELAY } from "../_runtime.ts";
import { DAY, fakeLongClock } from "../_test_clock.ts";

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
  life.startHandshake(fireAt(performance.now(), () => fired = true));
  life.enter(OPEN);
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(fired, false);
});

Deno.test("core: a drain timeout of 30 days does not cut at 24.8 days, nor one of Infinity", async () => {
  // A runtime's timer waits at most 2^31 - 1 ms: past it the drain must wait again, not end.
  for (const drainTimeout of [30 * DAY, Infinity]) {
    const [a, b] = memoryPair();
    const release = Promise.withResolvers<void>();
    const handlers = { wait: () => release.promise.then(() => "done") };
    const [server, client] = await Promise.all([
      openChannel(a, { handlers }),
      openChannel<typeof handlers>(b, { drainTimeout }),
    ]);
    const clock = fakeLongClock();
    try {
      const call = client.remote.wait(undefined);
      let settled: unknown = "pending";
      const outcome = () => settled;
      call.then((value) => settled = value, (error) => settled = error);
      const closing = client.close();
      await new Promise((resolve) => setTimeout(resolve, 20));
      clock.advance(MAX_TIMER_DELAY + 1_000);
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(outcome(), "pending", `cut at the timer's cap (drainTimeout ${drainTimeout})`);
      if (drainTimeout !== Infinity) {
        clock.advance(30 * DAY - MAX_TIMER_DELAY);
        await new Promise((resolve) => setTimeout(resolve, 20));
        assert.ok(outcome() instanceof DrainTimeoutError, String(outcome()));
      }
      release.resolve();
      await closing;
    } finally {
      clock.restore();
      release.resolve();
      await Promise.all([client.closed.catch(() => {}), server.closed.catch(() => {})]);
    }
  }
});
