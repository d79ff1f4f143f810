// Test helpers: checking through /proc that worker processes are gone.

/** Whether `pid` is gone: no such process, or a zombie nobody reaped (it runs no code). */
export async function isGone(pid: number): Promise<boolean> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    // The state follows the parenthesised command name, which may itself contain spaces.
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z";
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return true;
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
