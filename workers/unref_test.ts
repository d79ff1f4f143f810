// unref() on a worker and on a pool: a program that made its calls and did not close them
// exits by itself, over either transport, and its workers go with it.

import assert from "node:assert/strict";
import { leakFreeTest, runToItsEnd, testEnv, waitUntilGone } from "./_test_processes.ts";

const PARENT = new URL("./_testdata/unref_parent.ts", import.meta.url);
/** Far beyond how long the parent needs: only a parent that never exits reaches it. */
const HANG_LIMIT_MS = 30_000;

/** Runs the parent with `args`; its output, or a failure if it did not exit by itself. */
async function runParent(args: string[]): Promise<unknown[]> {
  const flags = ["--allow-run", "--allow-read", "--allow-write", "--allow-net"];
  const out = await runToItsEnd(
    ["run", ...flags, PARENT.pathname, ...args],
    HANG_LIMIT_MS,
    testEnv(),
  );
  return JSON.parse(out);
}

for (const transport of ["stdio", "unix"]) {
  leakFreeTest(`an unref'd, idle worker lets its parent exit (${transport})`, async () => {
    const [pid, again] = await runParent([transport]) as number[];
    // The call made after unref() was answered before the parent left.
    assert.equal(pid, again);
    await waitUntilGone([pid]);
  });

  leakFreeTest(`an unref'd, idle pool lets its parent exit (${transport})`, async () => {
    const output = await runParent(["pool", transport]);
    assert.equal(output.at(-1), "after");
    await waitUntilGone(output.slice(0, -1) as number[]);
  });
}

leakFreeTest("an unref'd, idle thread worker lets its parent exit", async () => {
  const [pid, again] = await runParent(["thread"]) as number[];
  assert.equal(pid, again);
});

leakFreeTest("an unref'd, idle pool of threads lets its parent exit", async () => {
  const output = await runParent(["pool", "thread"]);
  assert.equal(output.at(-1), "after");
});
