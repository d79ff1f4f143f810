// Thread workers against a hostile or broken worker module and a careless parent: a thread
// stuck in a synchronous loop, one that ends itself or posts on conduit's port, close()
// while calls and streams are in flight, many threads at once.

import assert from "node:assert/strict";
import { runToItsEnd } from "./_test_processes.ts";
import { BUN_BIN, installed, skipped } from "../_test_tools.ts";

const PARENT = new URL("./_testdata/_hostile_thread_parent.ts", import.meta.url);
/** Far beyond how long the parent needs: only a parent that never exits reaches it. */
const HANG_LIMIT_MS = 20_000;

/** Runs the parent with `how`; its output lines, or a failure if it did not end by itself. */
async function runParent(how: string): Promise<string[]> {
  const out = await runToItsEnd(["run", "--allow-read", PARENT.pathname, how], HANG_LIMIT_MS);
  return out.trim().split("\n");
}

// Deno's terminate() does not stop a thread busy in a synchronous loop, which then holds the
// process open; a thread conduit has ended must not.
Deno.test("threads hostile: a thread ended while stuck in a loop does not hold its program", async () => {
  assert.deepEqual(await runParent("kill"), ["137 WorkerExitedError"]);
  assert.deepEqual(await runParent("close"), ["137 WorkerExitedError"]);
  assert.deepEqual(await runParent("load"), ["HandshakeError"]);
  assert.deepEqual(await runParent("pool"), ["DOMException", "replaced"]);
});

Deno.test("threads hostile: a thread with its process's permissions is not told to grant them with spawnWorker", async () => {
  // The parent runs without --allow-env, so its thread has none: no `permissions` option can
  // give a thread more than its process has; the process's own flag can.
  const [message] = await runParent("hint");
  assert.match(message, /^Requires env access to "HOME", run again with the --allow-env flag/);
  assert.doesNotMatch(message, /spawnWorker\(module, \{ permissions/);
});

Deno.test({
  name: `threads hostile: a Bun thread that calls process.exit(4) reads as exited with code 4${
    skipped(BUN_BIN)
  }`,
  ignore: !installed(BUN_BIN),
  async fn() {
    // Bun's Worker says the code its thread exited with (Node's too, through _thread.ts); Deno's
    // says nothing, and serveWorker turns Deno.exit() into self.close(): code 0 there.
    const { code, stdout, stderr } = await new Deno.Command(BUN_BIN, {
      args: [PARENT.pathname, "exit"],
      stdin: "null",
    }).output();
    assert.equal(code, 0, new TextDecoder().decode(stderr));
    // The call's WorkerExitedError, then close()'s status: code and success.
    assert.deepEqual(JSON.parse(new TextDecoder().decode(stdout)), [4, 4, false]);
  },
});
