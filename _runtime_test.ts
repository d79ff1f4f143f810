import assert from "node:assert/strict";
import { fireAt, MAX_TIMER_DELAY } from "./_runtime.ts";
import { DAY, fakeLongClock } from "./_test_clock.ts";

Deno.test("fireAt: a time past the longest timer waits again, and fires once it is reached", () => {
  const clock = fakeLongClock();
  try {
    const start = performance.now();
    let fired = 0;
    fireAt(start + 30 * DAY, () => fired++);
    clock.advance(MAX_TIMER_DELAY); // 24.8 days: the first timer fires, early
    assert.equal(fired, 0);
    assert.equal(clock.pending, 1);
    clock.advance(30 * DAY - MAX_TIMER_DELAY);
    assert.equal(fired, 1);
    assert.equal(clock.pending, 0);
    const cancel = fireAt(start + 60 * DAY, () => fired++);
    clock.advance(10 * DAY);
    cancel();
    clock.advance(21 * DAY);
    assert.equal(fired, 1);
    assert.equal(clock.pending, 0);
    // Never: no timer at all, which would hold the process for ever.
    fireAt(Infinity, () => fired++)();
    fireAt(Infinity, () => fired++);
    assert.equal(clock.pending, 0);
    clock.advance(100 * DAY);
    assert.equal(fired, 1);
  } finally {
    clock.restore();
  }
});
