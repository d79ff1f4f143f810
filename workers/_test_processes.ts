// Test helpers: checking through /proc that worker processes are gone, and running a parent
// program to its end.

import assert from "node:assert/strict";

/** Whether `pid` is gone: no such process, or a zombie nobody reaped (it runs no code). */
export async function isGone(pid: number): Promise<boolean> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    // The state follows the parenthesised command name, which may itself contain spaces.
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z";
  } catch (error) {
    // A process that exits while its stat is read fails the read with ESRCH.
    if (error instanceof Deno.errors.NotFound || (error as { code?: string }).code === "ESRCH") {
      return true;
    }
    throw error;
  }
}

/** Polls until every pid is gone; throws, naming the survivors, after `timeoutMs`. */
export async function waitUntilGone(pids: readonly number[], timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const alive: number[] = [];
    for (const pid of pids) if (!await isGone(pid)) alive.push(pid);
    if (alive.length === 0) return;
    if (Date.now() > end) {
      throw new Error(`Processes still running after ${timeoutMs} ms: ${alive.join(", ")}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The environment variable that marks the processes one test spawned. */
const MARK = "CONDUIT_TEST_MARK";
let current: Record<string, string> = {};

/**
 * The environment that marks processes as spawned by the running test; pass it (merged) as
 * `env` to every spawn. Descendants inherit it.
 */
export function testEnv(): Record<string, string> {
  return current;
}

/**
 * A `Deno.test` that afterwards checks through /proc that no process carrying its mark (see
 * {@linkcode testEnv}) is still running. Tests in one file run one at a time, so the mark of
 * the running test is module state.
 */
export function leakFreeTest(name: string, fn: () => Promise<void>): void {
  Deno.test(name, async () => {
    const mark = `${MARK}=${crypto.randomUUID()}`;
    current = { [MARK]: mark.slice(MARK.length + 1) };
    try {
      await fn();
    } finally {
      current = {};
    }
    const end = Date.now() + 5_000;
    let left = await marked(mark);
    while (left.length > 0 && Date.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      left = await marked(mark);
    }
    if (left.length > 0) throw new Error(`Processes left running after "${name}": ${left}`);
  });
}

/** The live processes whose environment holds `mark` (zombies have none left). */
async function marked(mark: string): Promise<number[]> {
  const pids: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const environ = await Deno.readTextFile(`/proc/${entry.name}/environ`);
      if (environ.split("\0").includes(mark)) pids.push(Number(entry.name));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return pids;
}

/**
 * Runs `deno <args>` to its end and returns its stdout; fails the test if it did not end by
 * itself within `limitMs` (it is then killed) or ended with another code than 0.
 */
export async function runToItsEnd(
  args: readonly string[],
  limitMs: number,
  env: Record<string, string> = {},
): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [...args],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    child.kill("SIGKILL");
  }, limitMs);
  const { code, stdout, stderr } = await child.output();
  clearTimeout(timer);
  const err = new TextDecoder().decode(stderr);
  const out = new TextDecoder().decode(stdout);
  assert.ok(!hung, `deno ${args.join(" ")} did not end by itself; it printed ${out}: ${err}`);
  assert.equal(code, 0, err);
  return out;
}
