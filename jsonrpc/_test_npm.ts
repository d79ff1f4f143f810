// Whether an npm module is in Deno's cache (tests never install; .ci/run caches them).

/** The pinned MCP reference server the tests run. */
export const SERVER_EVERYTHING = "npm:@modelcontextprotocol/server-everything@2026.8.31";
/** The pinned official MCP TypeScript SDK. */
export const MCP_SDK = "npm:@modelcontextprotocol/sdk@1.32.2";

/** True when `specifier` loads from the cache alone; else warns, naming it. */
export function cachedNpm(specifier: string, what: string): boolean {
  const { success } = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--cached-only", `import ${JSON.stringify(specifier)};`],
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
