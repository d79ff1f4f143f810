import assert from "node:assert/strict";
import { Spinner } from "./_spin.ts";

Deno.test("spinner: a spin ends when the answer comes, and counts as a hit", () => {
  const spinner = new Spinner(1_000_000);
  let checks = 0;
  assert.equal(spinner.spinUntil(() => ++checks === 100), true);
  assert.equal(checks, 100);
});

Deno.test("spinner: a spin whose message the peer never takes gives up long before its time", () => {
  // 70 µs for the peer to take the message, against a 2 s spin.
  const spinner = new Spinner(2_000_000);
  const started = performance.now();
  assert.equal(spinner.spinUntil(() => false, () => false), false);
  assert.ok(performance.now() - started < 1_000, "gave up early");
});

Deno.test("spinner: once the peer took the message, a spin waits the whole spin for the answer", () => {
  const spinner = new Spinner(30_000);
  const started = performance.now();
  assert.equal(spinner.spinUntil(() => false, () => true), false);
  assert.ok(performance.now() - started >= 30, "spun 30 ms");
});

Deno.test("spinner: while spins mostly miss, a side spins only one wait in 32", () => {
  const spinner = new Spinner(1);
  while (spinner.shouldSpin()) spinner.spinUntil(() => false);
  let spins = 0;
  for (let i = 0; i < 64; i++) if (spinner.shouldSpin()) spins++;
  assert.equal(spins, 2);
  // Hits (of the probes) bring the spin back.
  for (let i = 0; i < 8; i++) spinner.spinUntil(() => true);
  assert.equal(spinner.shouldSpin(), true);
});
