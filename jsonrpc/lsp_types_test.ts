// docs/jsonrpc.md's "Typing a remote from vscode-languageserver-protocol" block, type-checked and
// run as a program: the package is locked in testdata/npm_programs.lock (not deno.lock, whose
// every package a user's first `deno task` downloads), so the block runs in a subprocess with
// that lock, from Deno's cache (.ci/run caches it).

import assert from "node:assert/strict";
import { cachedNpm, NPM_PROGRAMS_LOCK } from "./_test_npm.ts";

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
    // Inside the package, so that "@conduit/ipc/…" resolves as the docs' blocks do.
    const file = new URL(`./_lsp_types_block_${crypto.randomUUID()}.ts`, import.meta.url);
    await Deno.writeTextFile(file, code);
    try {
      const { code: status, stderr } = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--check", "--cached-only", NPM_PROGRAMS_LOCK, file.pathname],
        stdout: "null",
        stderr: "piped",
      }).output();
      assert.equal(status, 0, new TextDecoder().decode(stderr));
    } finally {
      await Deno.remove(file);
    }
  },
});
