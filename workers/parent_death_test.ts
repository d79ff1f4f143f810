// Workers never outlive their parent, and conduit never pre-empts the parent's own signal
// handling (issue 13, bugs 6 and 7). Real parent processes, killed from here.
import assert from "node:assert/strict";
import { leakFreeTest, testEnv, waitUntilGone } from "./_test_processes.ts";

const ORPHAN_PARENT = new URL("./_testdata/orphan_parent.ts", import.meta.url);
const GRACEFUL_PARENT = new URL("./_testdata/graceful_parent.ts", import.meta.url);

/** Whether util-linux setpriv (which spawnWorker uses for the parent-death signal) is here. */
const haveSetpriv = await new Deno.Command("setpriv", { args: ["--help"], stdout: "null" })
  .output().then((output) => output.success, () => false);
if (!haveSetpriv) console.warn("setpriv (util-linux) not found: parent-death tests skipped");

/**
 * Starts a parent with only --allow-run and reads its stdout line by line. With `setpriv`
 * false the parent cannot find setpriv (an empty PATH), as on a system without it.
 */
function startParent(url: URL, args: string[], setpriv = true) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--allow-run", url.pathname, ...args],
    env: { ...testEnv(), ...(setpriv ? {} : { PATH: "/nonexistent" }) },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  return {
    child,
    stderr: new Response(child.stderr).text(),
    /** The next line of stdout, or undefined at its end. */
    async line(): Promise<string | undefined> {
      while (!buffered.includes("\n")) {
        const { done, value } = await lines.read();
        if (done) return undefined;
        buffered += value;
      }
      const at = buffered.indexOf("\n");
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      return line;
    },
  };
}

leakFreeTest(
  "parent death: a SIGKILLed parent's worker dies even while busy in synchronous code",
  async () => {
    if (!haveSetpriv) return;
    const parent = startParent(ORPHAN_PARENT, ["hang"]);
    const pids: number[] = JSON.parse((await parent.line())!);
    parent.child.kill("SIGKILL");
    assert.equal((await parent.child.status).signal, "SIGKILL");
    await parent.stderr;
    // The busy worker spins for 120 s: only the kernel's parent-death signal ends it sooner.
    await waitUntilGone(pids, 5_000);
  },
);

leakFreeTest(
  "signals: an application's SIGTERM handler runs once and its in-flight call completes",
  async () => {
    const parent = startParent(GRACEFUL_PARENT, []);
    const { pid } = JSON.parse((await parent.line())!);
    parent.child.kill("SIGTERM");
    const lines: string[] = [];
    for (let line = await parent.line(); line !== undefined; line = await parent.line()) {
      lines.push(line);
    }
    const status = await parent.child.status;
    const stderr = await parent.stderr;
    assert.equal(status.code, 0, stderr);
    assert.deepEqual(lines.map((line) => JSON.parse(line)), [{ signal: 1 }, { result: "slept" }]);
    await waitUntilGone([pid]);
  },
);

for (const setpriv of [true, false]) {
  leakFreeTest(
    `signals: an application that exits from its handler leaves no busy worker behind${
      setpriv ? "" : " (no setpriv)"
    }`,
    async () => {
      const parent = startParent(GRACEFUL_PARENT, ["exit"], setpriv);
      const { pid } = JSON.parse((await parent.line())!);
      parent.child.kill("SIGTERM");
      assert.deepEqual(JSON.parse((await parent.line())!), { signal: 1 });
      assert.equal(await parent.line(), undefined);
      assert.equal((await parent.child.status).code, 0, await parent.stderr);
      // The worker is in a 120 s synchronous loop: the exit itself must have killed it.
      await waitUntilGone([pid], 5_000);
    },
  );
}
