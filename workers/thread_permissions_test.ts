// Thread workers and permissions: without `permissions` a thread has its process's; with them
// it has only those, when Deno's worker-options feature is on (flag or config), and conduit
// refuses with ThreadPermissionsError when it is off instead of letting Deno exit the process.

import assert from "node:assert/strict";
import { threadLeakFreeTest } from "./_test_threads.ts";
import { ThreadPermissionsError } from "./errors.ts";
import { spawnWorker } from "./spawn_worker.ts";
import { WorkerPool } from "./worker_pool.ts";

const READER = new URL("./_testdata/permission_worker.ts", import.meta.url);
const PARENT = new URL("./_testdata/thread_permissions_parent.ts", import.meta.url);
const CONFIG = new URL("../deno.json", import.meta.url);

threadLeakFreeTest("thread worker: without permissions it has its process's", async () => {
  await using worker = await spawnWorker<{ read(path: string): string }>(READER, {
    thread: true,
  });
  assert.match(await worker.remote.read(CONFIG.pathname), /"@conduit\/ipc"/);
});

Deno.test("thread worker: permissions without worker-options are ThreadPermissionsError", async () => {
  // This test process runs without --unstable-worker-options (Deno would exit it with 70).
  const error = await spawnWorker(READER, { thread: true, permissions: {} }).catch((e) => e);
  assert.ok(error instanceof ThreadPermissionsError, String(error));
  assert.equal(error.flag, "--unstable-worker-options");
  assert.match(error.message, /permission_worker\.ts.*--unstable-worker-options/);
  assert.throws(
    () => new WorkerPool(READER, { thread: true, size: 1, permissions: { read: true } }),
    ThreadPermissionsError,
  );
  // A permission that does not exist is a TypeError before the flag matters.
  const unknown = { thread: true, permissions: { hrtime: true } as Record<string, boolean> };
  assert.ok(await spawnWorker(READER, unknown).catch((e) => e) instanceof TypeError);
});

/** Runs the permissions parent with `flags` (and `args` for it); its JSON output. */
async function runParent(
  flags: string[],
  args: string[] = [],
): Promise<{ inside: boolean; outside: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, PARENT.pathname, ...args],
    stdin: "null",
  }).output();
  const err = new TextDecoder().decode(stderr);
  assert.equal(code, 0, err);
  return JSON.parse(new TextDecoder().decode(stdout));
}

Deno.test("thread worker: with --unstable-worker-options it gets only its permissions", async () => {
  // Under -A conduit reads the flag from the command line.
  const seen = await runParent(["-A", "--unstable-worker-options"]);
  assert.equal(seen.inside, true);
  assert.match(seen.outside, /^NotCapable: .*deno\.json/);
  // With fewer permissions Deno hides the command line: the parent says the flag is on.
  const said = await runParent(["--allow-read", "--unstable-worker-options"], ["--say-on"]);
  assert.deepEqual(said, seen);
  // Not said, not seen: refused, and the process lives to report it.
  const { code, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--unstable-worker-options", PARENT.pathname],
    stdin: "null",
  }).output();
  assert.equal(code, 1);
  assert.match(new TextDecoder().decode(stderr), /ThreadPermissionsError/);
});

Deno.test('thread worker: "unstable": ["worker-options"] in the config works too', async () => {
  const dir = await Deno.makeTempDir({ prefix: "conduit-thread-" });
  try {
    const config = JSON.parse(await Deno.readTextFile(CONFIG));
    const path = `${dir}/deno.json`;
    await Deno.writeTextFile(path, JSON.stringify({ ...config, unstable: ["worker-options"] }));
    const seen = await runParent(["-A", "--config", path, "--no-lock"]);
    assert.equal(seen.inside, true);
    assert.match(seen.outside, /^NotCapable: /);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
