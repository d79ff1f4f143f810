// How the tests run the npm programs they drive, and whether those are in Deno's cache (tests
// never install; .ci/run caches them).
//
// The npm programs the tests drive are locked in testdata/npm_programs.lock, not deno.lock:
// `deno task` installs every package deno.lock holds before it runs anything, so a package
// there is a download for a user's first `deno task demo`. Everything that resolves them runs
// in a subprocess started with `npmProgramArgs`.

/** The pinned MCP reference server the tests run. */
export const SERVER_EVERYTHING = "npm:@modelcontextprotocol/server-everything@2026.8.31";
/** The pinned vscode-jsonrpc (the library VS Code's LSP client and servers use). */
export const VSCODE_JSONRPC = "npm:vscode-jsonrpc@10.0.0";
/** The pinned official MCP TypeScript SDK. */
export const MCP_SDK = "npm:@modelcontextprotocol/sdk@1.32.2";

/** The npm programs' lock file, a path. */
const LOCK = new URL("../testdata/npm_programs.lock", import.meta.url).pathname;

/**
 * The flags every Deno that resolves an npm program is started with (`.ci/run`'s `deno cache`
 * takes them all but `--cached-only`). `--no-config`: a Deno that finds deno.json (a cwd in the
 * repository) writes the workspace's dependencies into the lock it is given, and one that finds
 * none (pyright runs in a temporary directory) takes them out again, so runs from both places
 * rewrote the lock in turn. `--frozen`: a run that would change the lock fails instead of
 * writing it.
 */
const NPM_PROGRAM_FLAGS = ["--no-config", `--lock=${LOCK}`, "--frozen", "--cached-only"];

/**
 * The arguments of `deno <subcommand>` on an npm program or a module that imports one:
 * `args` (permissions, other flags, the module and its arguments) after the shared flags.
 */
export function npmProgramArgs(subcommand: "run" | "eval", args: readonly string[]): string[] {
  return [subcommand, ...NPM_PROGRAM_FLAGS, ...args];
}

/** True when `specifier` (a `.json` one too) loads from the cache alone; else warns, naming it. */
export function cachedNpm(specifier: string, what: string): boolean {
  const attributes = specifier.endsWith(".json") ? ' with { type: "json" }' : "";
  const { success } = new Deno.Command(Deno.execPath(), {
    args: npmProgramArgs("eval", [`import ${JSON.stringify(specifier)}${attributes};`]),
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).outputSync();
  if (!success) {
    console.warn(
      `skipping the ${what} tests: ${specifier} is not in Deno's cache (run: deno cache ` +
        `--no-config --frozen --lock=testdata/npm_programs.lock ${specifier}, as .ci/run does)`,
    );
  }
  return success;
}
