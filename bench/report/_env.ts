// The test environment, as the report states it.

const ROOT = new URL("../../", import.meta.url).pathname;

/** Where and when the figures were measured. */
export interface Environment {
  date: string;
  cpu: string;
  cores: number;
  memoryGiB: number;
  os: string;
  deno: string;
  v8: string;
  typescript: string;
  /** The git commit measured, with `+dirty` if the tree had changes. */
  commit: string;
  /** The 1-, 5- and 15-minute load averages before and after the run. */
  loadBefore: string;
  loadAfter: string;
  /** Wall-clock duration of the run, in seconds. */
  seconds: number;
}

/** What is known before the run; `loadAfter` and `seconds` are filled in at the end. */
export async function environment(): Promise<Environment> {
  const cpuinfo = readOr("/proc/cpuinfo");
  const meminfo = readOr("/proc/meminfo");
  const memKb = Number(/MemTotal:\s+(\d+)/.exec(meminfo)?.[1] ?? 0);
  return {
    date: new Date().toISOString(),
    cpu: /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1]?.trim() ?? "unknown",
    cores: navigator.hardwareConcurrency,
    memoryGiB: Math.round(memKb / 2 ** 20),
    os: `${Deno.build.os} ${Deno.osRelease()} (${Deno.build.arch})`,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    typescript: Deno.version.typescript,
    commit: await gitCommit(),
    loadBefore: loadAverage(),
    loadAfter: "",
    seconds: 0,
  };
}

/** The 1-, 5- and 15-minute load averages. */
export function loadAverage(): string {
  return readOr("/proc/loadavg").split(" ").slice(0, 3).join(" ");
}

function readOr(path: string): string {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return "";
  }
}

async function gitCommit(): Promise<string> {
  const git = (...args: string[]) =>
    new Deno.Command("git", { args, cwd: ROOT, stdout: "piped", stderr: "null" }).output()
      .then((out) => new TextDecoder().decode(out.stdout).trim(), () => "");
  const commit = (await git("rev-parse", "--short", "HEAD")) || "unknown";
  // Only library code changes make the figures stale; the report's own files do not.
  const dirty = await git("status", "--porcelain", "--", ".", ":!bench/");
  return dirty ? `${commit}+dirty` : commit;
}
