import assert from "node:assert/strict";
import { fireAt, MAX_TIMER_DELAY } from "./_runtime.ts";

Deno.test("fireAt: a time past the longest timer waits again, and fires once it is reached", () => {
  // A fake clock: timers are kept, never run by the runtime; `performance.now()` moves by hand.
  const global = globalThis as unknown as { setTimeout: unknown; clearTimeout: unknown };
  const [realSet, realClear] = [global.setTimeout, global.clearTimeout];
  let now = 0;
  const pending = new Map<number, { fire: () => void; at: number }>();
  let ids = 0;
  global.setTimeout = (fire: () => void, delay: number) => {
    assert.ok(delay <= MAX_TIMER_DELAY, `a timer of ${delay} ms`);
    pending.set(++ids, { fire, at: now + delay });
    return ids;
  };
  global.clearTimeout = (id: number) => pending.delete(id);
  Object.defineProperty(performance, "now", { value: () => now, configurable: true });
  const run = (to: number) => {
    now = to;
    for (const [id, timer] of [...pending]) {
      if (timer.at > now) continue;
      pending.delete(id);
      timer.fire();
    }
  };
  try {
    const day = 86_400_000;
    let fired = 0;
    fireAt(30 * day, () => fired++);
    run(MAX_TIMER_DELAY); // 24.8 days: the first timer fires, early
    assert.equal(fired, 0);
    assert.equal(pending.size, 1);
    run(30 * day);
    assert.equal(fired, 1);
    assert.equal(pending.size, 0);
    const cancel = fireAt(60 * day, () => fired++);
    run(40 * day);
    cancel();
    run(61 * day);
    assert.equal(fired, 1);
    assert.equal(pending.size, 0);
  } finally {
    global.setTimeout = realSet;
    global.clearTimeout = realClear;
    delete (performance as { now?: unknown }).now;
  }
});
