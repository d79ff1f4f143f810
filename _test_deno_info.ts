// `deno info --json` of a module, with this package's deno.json: the module graph tests' one
// way to read a graph.

import assert from "node:assert/strict";

/** One module of `deno info --json`'s graph. */
export interface InfoModule {
  specifier: string;
  npmPackage?: string;
  dependencies?: Array<{ code?: { specifier: string }; isDynamic?: boolean }>;
}

/** What `deno info --json` reports. */
export interface DenoInfo {
  roots: string[];
  modules: InfoModule[];
}

const root = new URL("./", import.meta.url);

/** The module graph of `file` (a path), as `deno info --json` reports it. */
export async function denoInfo(file: string): Promise<DenoInfo> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--config", new URL("deno.json", root).pathname, file],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  return JSON.parse(new TextDecoder().decode(stdout)) as DenoInfo;
}
