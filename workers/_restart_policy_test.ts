import assert from "node:assert/strict";
import fc from "fast-check";
import { RestartPolicy } from "./_restart_policy.ts";

const OPTIONS = {
  restartDelay: 100,
  maxRestartDelay: 1_000,
  maxRestarts: 5,
  restartWindow: 30_000,
};

Deno.test("RestartPolicy: the delay doubles with each crash in the window, up to the maximum", () => {
  const policy = new RestartPolicy({ ...OPTIONS, maxRestarts: 10 });
  const delays: number[] = [];
  for (let now = 0; now < 6_000; now += 1_000) {
    const decision = policy.crashed(now);
    assert.ok(decision.restart);
    delays.push(decision.delay);
  }
  assert.deepEqual(delays, [100, 200, 400, 800, 1_000, 1_000]);
});

Deno.test("RestartPolicy: one crash more than maxRestarts within the window is a crash loop", () => {
  const policy = new RestartPolicy(OPTIONS);
  for (let i = 1; i <= 5; i++) {
    assert.deepEqual(policy.crashed(i * 10), {
      restart: true,
      delay: Math.min(100 * 2 ** (i - 1), 1_000),
      crashes: i,
    });
  }
  assert.deepEqual(policy.crashed(60), { restart: false, crashes: 6 });
});

Deno.test("RestartPolicy: crashes older than the window are forgotten, and the backoff resets", () => {
  const policy = new RestartPolicy(OPTIONS);
  for (let i = 0; i < 5; i++) assert.ok(policy.crashed(i).restart);
  // 30 s after the first crash it has left the window; the others are still in it.
  assert.deepEqual(policy.crashed(30_000), { restart: true, delay: 1_000, crashes: 5 });
  // Long after all of them, a crash is a first crash again.
  assert.deepEqual(policy.crashed(100_000), { restart: true, delay: 100, crashes: 1 });
});

Deno.test("RestartPolicy: maxRestarts 0 gives up at the first crash; a zero window counts one", () => {
  assert.deepEqual(new RestartPolicy({ ...OPTIONS, maxRestarts: 0 }).crashed(0), {
    restart: false,
    crashes: 1,
  });
  const forgetful = new RestartPolicy({ ...OPTIONS, maxRestarts: 1, restartWindow: 0 });
  for (let now = 0; now < 5; now++) assert.deepEqual(forgetful.crashed(now).crashes, 1);
});

Deno.test("RestartPolicy: agrees with a model that counts every crash in a sliding window", () => {
  fc.assert(fc.property(
    fc.integer({ min: 0, max: 8 }),
    fc.integer({ min: 0, max: 5_000 }),
    fc.array(fc.integer({ min: 0, max: 2_000 }), { maxLength: 40 }),
    (maxRestarts, restartWindow, gaps) => {
      const policy = new RestartPolicy({ ...OPTIONS, maxRestarts, restartWindow });
      const times: number[] = [];
      let now = 0;
      for (const gap of gaps) {
        now += gap;
        const crashes = times.filter((t) => now - t < restartWindow).length + 1;
        times.push(now);
        const expected = crashes > maxRestarts ? { restart: false, crashes } : {
          restart: true,
          delay: Math.min(OPTIONS.restartDelay * 2 ** (crashes - 1), OPTIONS.maxRestartDelay),
          crashes,
        };
        assert.deepEqual(policy.crashed(now), expected);
      }
    },
  ));
});

Deno.test("RestartPolicy: settings out of range are a RangeError naming them", () => {
  assert.throws(
    () => new RestartPolicy({ ...OPTIONS, restartDelay: -1 }),
    /restartDelay .* got -1/,
  );
  assert.throws(
    () => new RestartPolicy({ ...OPTIONS, maxRestarts: 1.5 }),
    /maxRestarts .* got 1.5/,
  );
  assert.throws(
    () => new RestartPolicy({ ...OPTIONS, restartWindow: NaN }),
    /restartWindow .* got NaN/,
  );
});
