// docs/jsonrpc.md's "Typing a remote from vscode-languageserver-protocol" block, type-checked and
// run as a program: the package is locked in testdata/npm_programs.lock (not deno.lock, whose
// every package a user's first `deno task` downloads), so the block runs in a subprocess with
// that lock, from Deno's cache (.ci/run caches it). That subprocess reads no deno.json (see
// _test_npm.ts), so an import map built from deno.json's `exports` resolves "@conduit/ipc/…".

import assert from "node:assert/strict";
import { cachedNpm, npmProgramArgs } from "./_test_npm.ts";

const PROTOCOL = "npm:vscode-languageserver-protocol@3.17.5";
const HEADING = "## Typing a remote from `vscode-languageserver-protocol`";

/** The first ```ts block after `heading` in `markdown`. */
function blockAfter(markdown: string, heading: string): string {
  const at = markdown.indexOf(heading);
  assert.ok(at >= 0, `no heading ${heading}`);
  const match = /```ts[^\n]*\n([\s\S]*?)```/.exec(markdown.slice(at));
  assert.ok(match !== null, `no code block after ${heading}`);
  return match[1];
}

Deno.test({
  name: "jsonrpc: docs/jsonrpc.md types a remote from vscode-languageserver-protocol",
  ignore: !cachedNpm(PROTOCOL, "LSP types"),
  async fn() {
    const docs = new URL("../docs/jsonrpc.md", import.meta.url);
    const code = blockAfter(await Deno.readTextFile(docs), HEADING);
    assert.match(code, new RegExp(`from "${PROTOCOL}"`));
    const dir = await Deno.makeTempDir({ prefix: "conduit-lsp-types" });
    try {
      await Deno.writeTextFile(`${dir}/block.ts`, code);
      await Deno.writeTextFile(`${dir}/import_map.json`, JSON.stringify(await packageImportMap()));
      const { code: status, stderr } = await new Deno.Command(Deno.execPath(), {
        args: npmProgramArgs("run", [
          "--check",
          `--import-map=${dir}/import_map.json`,
          `${dir}/block.ts`,
        ]),
        stdout: "null",
        stderr: "piped",
      }).output();
      assert.equal(status, 0, new TextDecoder().decode(stderr));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** "@conduit/ipc" and each of its subpaths, mapped to the files deno.json `exports` names. */
async function packageImportMap(): Promise<{ imports: Record<string, string> }> {
  const root = new URL("../", import.meta.url);
  const { name, exports } = JSON.parse(await Deno.readTextFile(new URL("deno.json", root))) as {
    name: string;
    exports: Record<string, string>;
  };
  const imports: Record<string, string> = {};
  for (const [subpath, file] of Object.entries(exports)) {
    imports[`${name}${subpath.slice(1)}`] = new URL(file, root).href;
  }
  return { imports };
}
