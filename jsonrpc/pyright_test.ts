// pyright's language server (npm `pyright`, run by the Deno running the tests) driven through
// openJsonRpc over its stdio: a Language Server that is not Deno's own.

import assert from "node:assert/strict";
import type { Channel } from "../channel/mod.ts";
import { openJsonRpc } from "./mod.ts";
import { spawnTransport } from "../transports/stdio.ts";
import { cachedNpm, npmProgramArgs } from "./_test_npm.ts";

/** The pinned pyright (.ci/run caches it; the tests never install). */
const PYRIGHT = "npm:pyright@1.1.414";

interface Position {
  line: number;
  character: number;
}
interface Range {
  start: Position;
  end: Position;
}
interface Diagnostic {
  range: Range;
  message: string;
  severity?: number;
  rule?: string;
}
interface Pyright {
  initialize(params: object): { capabilities: { hoverProvider?: unknown } };
  initialized(params: object): void;
  "textDocument/didOpen"(params: {
    textDocument: { uri: string; languageId: string; version: number; text: string };
  }): void;
  "textDocument/hover"(params: {
    textDocument: { uri: string };
    position: Position;
  }): { contents: unknown } | null;
  /** With a partialResultToken: the locations file by file, then the final result. */
  "textDocument/references"(params: {
    textDocument: { uri: string };
    position: Position;
    context: { includeDeclaration: boolean };
    partialResultToken: string;
  }): AsyncIterable<Location[] | null>;
  shutdown(): null;
  exit(): void;
}
interface Location {
  uri: string;
  range: Range;
}

const have = cachedNpm(`${PYRIGHT}/package.json`, "pyright");

Deno.test({
  name: "jsonrpc: pyright: initialize, diagnostics of a type error, hover, shutdown, exit",
  ignore: !have,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "conduit-pyright" });
    const file = `${dir}/main.py`;
    const text = 'answer: int = "forty-two"\nprint(answer)\n';
    await Deno.writeTextFile(file, text);
    const uri = new URL(`file://${file}`).href;
    const diagnostics = Promise.withResolvers<Diagnostic[]>();
    const protocolErrors: unknown[] = [];
    const child = spawnPyright(dir);
    const lsp = await openJsonRpc<Pyright>(child, {
      framing: "content-length",
      onProtocolError: (error) => protocolErrors.push(error),
      handlers: {
        "workspace/configuration": (params: { items: unknown[] }) => params.items.map(() => null),
        "client/registerCapability": () => null,
        "window/workDoneProgress/create": () => null,
        "window/logMessage": () => {},
        "textDocument/publishDiagnostics"(params: { uri: string; diagnostics: Diagnostic[] }) {
          if (params.uri === uri && params.diagnostics.length > 0) {
            diagnostics.resolve(params.diagnostics);
          }
        },
      },
    });
    try {
      const init = await lsp.remote.initialize({
        processId: Deno.pid,
        rootUri: new URL(`file://${dir}/`).href,
        workspaceFolders: [{ uri: new URL(`file://${dir}/`).href, name: "test" }],
        capabilities: {
          workspace: { configuration: true, workspaceFolders: true },
          textDocument: {
            hover: { contentFormat: ["markdown", "plaintext"] },
            publishDiagnostics: {},
          },
        },
      });
      assert.ok(init.capabilities.hoverProvider);
      lsp.notify("initialized", {});
      lsp.notify("textDocument/didOpen", {
        textDocument: { uri, languageId: "python", version: 1, text },
      });

      const found = await diagnostics.promise;
      const typeError = found.find((d) => /not assignable/.test(d.message));
      assert.ok(typeError, JSON.stringify(found));
      assert.match(typeError.message, /int/);
      assert.equal(typeError.range.start.line, 0);

      const hover = await lsp.remote["textDocument/hover"]({
        textDocument: { uri },
        position: { line: 1, character: 8 },
      });
      assert.match(JSON.stringify(hover?.contents), /answer: int/);

      await shutDown(lsp, child);
    } finally {
      await lsp.close();
      await Deno.remove(dir, { recursive: true });
    }
    assert.deepEqual(protocolErrors, []);
  },
});

Deno.test({
  name: "jsonrpc: pyright: textDocument/references with a partialResultToken is a stream",
  ignore: !have,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "conduit-pyright" });
    const text = "class Thing:\n    pass\n\n\nfirst = Thing()\nsecond: Thing = first\n";
    await Deno.writeTextFile(`${dir}/things.py`, text);
    const uri = new URL(`file://${dir}/things.py`).href;
    const child = spawnPyright(dir);
    const lsp = await openJsonRpc<Pyright>(child, {
      framing: "content-length",
      handlers: {
        "workspace/configuration": (params: { items: unknown[] }) => params.items.map(() => null),
        "client/registerCapability": () => null,
        "window/workDoneProgress/create": () => null,
        "window/logMessage": () => {},
        "textDocument/publishDiagnostics": () => {},
        // pyright's own work-done progress ("Finding references"), on a token it created.
        "$/progress": () => {},
      },
    });
    try {
      await lsp.remote.initialize({
        processId: Deno.pid,
        rootUri: new URL(`file://${dir}/`).href,
        capabilities: { workspace: { configuration: true }, window: { workDoneProgress: true } },
      });
      lsp.notify("initialized", {});
      lsp.notify("textDocument/didOpen", {
        textDocument: { uri, languageId: "python", version: 1, text },
      });
      const parts: (Location[] | null)[] = [];
      for await (
        const part of lsp.remote["textDocument/references"]({
          textDocument: { uri },
          position: { line: 0, character: 6 },
          context: { includeDeclaration: true },
          partialResultToken: "refs",
        })
      ) {
        parts.push(part);
      }
      // pyright sends the locations as partial results and, as LSP asks, an empty final result.
      assert.ok(parts.length >= 2, JSON.stringify(parts));
      assert.deepEqual(parts.at(-1), []);
      const lines = parts.flatMap((part) => part ?? []).map((location) => {
        assert.equal(location.uri, uri);
        return location.range.start.line;
      });
      assert.deepEqual(lines.sort(), [0, 4, 5]);
      await shutDown(lsp, child);
    } finally {
      await lsp.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** LSP's way out: `shutdown`, then `exit`, after which the server leaves with code 0. */
async function shutDown(
  lsp: Channel<Pyright>,
  child: ReturnType<typeof spawnPyright>,
): Promise<void> {
  assert.equal(await lsp.remote.shutdown(), null);
  lsp.notify("exit", undefined);
  assert.equal((await child.status).code, 0);
}

/** pyright's language server over stdio, run from Deno's npm cache. */
function spawnPyright(cwd: string): ReturnType<typeof spawnTransport> {
  return spawnTransport(Deno.execPath(), {
    args: npmProgramArgs("run", ["-A", `${PYRIGHT}/langserver.index.js`, "--stdio"]),
    cwd,
    stderr: "discard",
  });
}
