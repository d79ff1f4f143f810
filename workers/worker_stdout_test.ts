// A worker's stdout cannot corrupt its channel: over stdio, console.log and Deno.stdout are
// moved to stderr before the worker module loads, and what still reaches the pipe (node's
// process.stdout) fails with an error that quotes it; over a Unix socket stdout is forwarded.
import assert from "node:assert/strict";
import { leakFreeTest, testEnv } from "./_test_processes.ts";
import type { NoisyApi, PrintRoute } from "./_testdata/noisy_worker.ts";
import { WorkerExitedError, WorkerStdoutError } from "./errors.ts";
import { spawnWorker, type WorkerTransportKind } from "./spawn_worker.ts";

const NOISY = new URL("./_testdata/noisy_worker.ts", import.meta.url);
const PREFIX_PARENT = new URL("./_testdata/noisy_parent.ts", import.meta.url);

function spawnNoisy(
  transport: WorkerTransportKind,
  args: string[],
  lines: { stdout: string[]; stderr: string[] },
) {
  return spawnWorker<NoisyApi>(NOISY, {
    transport,
    args,
    env: testEnv(),
    stderr: (line) => lines.stderr.push(line),
    stdout: (line) => lines.stdout.push(line),
  });
}

leakFreeTest(
  "worker stdout/stdio: console.log and Deno.stdout, at load and in handlers, are forwarded",
  async () => {
    const lines = { stdout: [] as string[], stderr: [] as string[] };
    const worker = await spawnNoisy("stdio", ["--at-load"], lines);
    for (const how of ["console", "Deno.stdout"] as const) {
      assert.equal(await worker.remote.print({ text: `from ${how}`, how }), "printed");
    }
    assert.equal(await worker.remote.echo(7), 7);
    assert.equal((await worker.close()).code, 0);
    // Each line exactly once, in order, on the worker's stderr (its stdout is the channel).
    assert.deepEqual(lines.stderr, [
      "worker starting up",
      "raw bytes at load",
      "from console",
      "from Deno.stdout",
    ]);
    assert.deepEqual(lines.stdout, []);
  },
);

leakFreeTest(
  "worker stdout/stdio: process.stdout in a handler fails with the text quoted",
  async () => {
    const lines = { stdout: [] as string[], stderr: [] as string[] };
    const worker = await spawnNoisy("stdio", [], lines);
    const error = await worker.remote.print({ text: "hello from node", how: "node:process" }).then(
      () => assert.fail("expected a rejection"),
      (error) => error,
    );
    assert.ok(error instanceof WorkerExitedError, String(error));
    assert.match(error.message, /wrote text to its stdout: "hello from node\\n"/);
    assert.ok(error.cause instanceof WorkerStdoutError);
    assert.equal(error.cause.text, "hello from node\n");
    assert.match(error.cause.message, /console\.error/);
    await worker.exited;
  },
);

leakFreeTest(
  "worker stdout/stdio: process.stdout at load fails the spawn, quoting it",
  async () => {
    const lines = { stdout: [] as string[], stderr: [] as string[] };
    const error = await spawnNoisy("stdio", ["--node-at-load"], lines).then(
      () => assert.fail("expected a rejection"),
      (error) => error,
    );
    assert.ok(error instanceof WorkerExitedError, String(error));
    assert.ok(error.cause instanceof WorkerStdoutError);
    assert.equal(error.cause.text, "node says hi\n");
  },
);

leakFreeTest(
  "worker stdout/unix: every route works and stdout is forwarded line by line",
  async () => {
    const lines = { stdout: [] as string[], stderr: [] as string[] };
    const worker = await spawnNoisy("unix", ["--at-load", "--node-at-load"], lines);
    const routes: PrintRoute[] = ["console", "Deno.stdout", "node:process"];
    for (const how of routes) {
      assert.equal(await worker.remote.print({ text: `from ${how}`, how }), "printed");
    }
    assert.equal((await worker.close()).code, 0);
    const all = [...lines.stdout, ...lines.stderr];
    for (
      const line of ["worker starting up", "raw bytes at load", "node says hi", "from console"]
    ) {
      assert.equal(all.filter((seen) => seen === line).length, 1, `${line} in ${all}`);
    }
    // Written to stdout after serveWorker started: still stdout, forwarded as such.
    assert.ok(lines.stdout.includes("from Deno.stdout"), String(lines.stdout));
    assert.ok(lines.stdout.includes("from node:process"), String(lines.stdout));
  },
);

leakFreeTest("worker stdout: by default each line reaches our stderr once, prefixed", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--allow-run", PREFIX_PARENT.pathname],
    env: testEnv(),
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  const stdout = new TextDecoder().decode(output.stdout);
  assert.equal(output.code, 0, stderr);
  const pid = Number(stdout.trim());
  for (const text of ["worker starting up", "raw bytes at load", "from console"]) {
    const line = `[noisy_worker.ts ${pid}] ${text}`;
    assert.equal(stderr.split("\n").filter((seen) => seen === line).length, 1, stderr);
  }
});

leakFreeTest(
  "worker stdout: a crashing worker's error lines are shown once, not again in the error",
  async () => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-prompt", "--allow-run", PREFIX_PARENT.pathname, "crash"],
      env: testEnv(),
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 1, stderr);
    // The worker's own report, forwarded with its prefix, once; the parent's uncaught
    // WorkerExitedError points to it instead of repeating it.
    const reports = stderr.split("\n").filter((line) => line.includes("Error: boom at load"));
    assert.equal(reports.length, 1, stderr);
    assert.match(reports[0], /^\[noisy_worker\.ts \d+\] /);
    assert.match(stderr, /WorkerExitedError: .*exited with code 1.*its stderr is printed above/);
  },
);
