// Whether an npm module is in Deno's cache (tests never install; .ci/run caches them).
//
// The npm programs the tests drive are locked in testdata/npm_programs.lock, not deno.lock:
// `deno task` installs every package deno.lock holds before it runs anything, so a package
// there is a download for a user's first `deno task demo`. Everything that resolves them runs
// in a subprocess with `NPM_PROGRAMS_LOCK`.

/** The pinned MCP reference server the tests run. */
export const SERVER_EVERYTHING = "npm:@modelcontextprotocol/server-everything@2026.8.31";
/** The pinned vscode-jsonrpc (the library VS Code's LSP client and servers use). */
export const VSCODE_JSONRPC = "npm:vscode-jsonrpc@10.0.0";
/** The pinned official MCP TypeScript SDK. */
export const MCP_SDK = "npm:@modelcontextprotocol/sdk@1.32.2";

/** The flag that resolves the npm programs against their own lock file. */
export const NPM_PROGRAMS_LOCK = `--lock=${
  new URL("../testdata/npm_programs.lock", import.meta.url).pathname
}`;

/** True when `specifier` loads from the cache alone; else warns, naming it. */
export function cachedNpm(specifier: string, what: string): boolean {
  const { success } = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--cached-only", NPM_PROGRAMS_LOCK, `import ${JSON.stringify(specifier)};`],
    stdout: "null",
    stderr: "null",
  }).outputSync();
  if (!success) {
    console.warn(
      `skipping the ${what} tests: ${specifier} is not in Deno's cache ` +
        `(run: deno cache ${specifier}, as .ci/run does)`,
    );
  }
  return success;
}
