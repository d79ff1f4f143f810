// `deno lsp` (the Deno running the tests) driven through openJsonRpc over its stdio.

import assert from "node:assert/strict";
import { openJsonRpc } from "./mod.ts";
import { spawnTransport } from "../transports/stdio.ts";

interface Position {
  line: number;
  character: number;
}
interface Diagnostic {
  range: { start: Position; end: Position };
  message: string;
  code?: number | string;
}
interface DenoLsp {
  initialize(params: object): { capabilities: { hoverProvider?: unknown } };
  "textDocument/hover"(params: {
    textDocument: { uri: string };
    position: Position;
  }): { contents: unknown } | null;
  shutdown(): null;
  initialized(params: object): void;
  "textDocument/didOpen"(params: {
    textDocument: { uri: string; languageId: string; version: number; text: string };
  }): void;
  exit(): void;
}

Deno.test("jsonrpc: deno lsp: initialize, diagnostics, hover, cancel, a server request, shutdown", async () => {
  const dir = await Deno.makeTempDir({ prefix: "conduit-lsp" });
  const file = `${dir}/main.ts`;
  const text = 'const answer: number = "forty-two";\nconsole.log(answer);\n';
  await Deno.writeTextFile(file, text);
  const uri = new URL(`file://${file}`).href;
  const diagnostics = Promise.withResolvers<Diagnostic[]>();
  const configurationAsked: unknown[] = [];
  const protocolErrors: unknown[] = [];
  const lsp = await openJsonRpc<DenoLsp>(
    spawnTransport(Deno.execPath(), { args: ["lsp"], cwd: dir, stderr: "discard" }),
    {
      framing: "content-length",
      onProtocolError: (error) => protocolErrors.push(error),
      handlers: {
        // The server asks and waits: a server-to-client request.
        "workspace/configuration"(params: { items: unknown[] }) {
          configurationAsked.push(params);
          return params.items.map(() => ({ enable: true, lint: false }));
        },
        "client/registerCapability": () => null,
        "window/workDoneProgress/create": () => null,
        "textDocument/publishDiagnostics"(params: { uri: string; diagnostics: Diagnostic[] }) {
          if (params.uri === uri && params.diagnostics.length > 0) {
            diagnostics.resolve(params.diagnostics);
          }
        },
      },
    },
  );
  try {
    const init = await lsp.remote.initialize({
      processId: Deno.pid,
      rootUri: new URL(`file://${dir}/`).href,
      capabilities: {
        workspace: { configuration: true },
        textDocument: { hover: { contentFormat: ["markdown", "plaintext"] } },
      },
      initializationOptions: { enable: true, lint: false },
    });
    assert.ok(init.capabilities.hoverProvider);
    lsp.notify("initialized", {});
    lsp.notify("textDocument/didOpen", {
      textDocument: { uri, languageId: "typescript", version: 1, text },
    });

    const found = await diagnostics.promise;
    const typeError = found.find((d) => d.code === 2322);
    assert.ok(typeError, JSON.stringify(found));
    assert.match(typeError.message, /string.*number/);
    assert.equal(typeError.range.start.line, 0);
    assert.ok(configurationAsked.length > 0, "deno lsp asked for workspace/configuration");

    const hover = await lsp.remote["textDocument/hover"]({
      textDocument: { uri },
      position: { line: 1, character: 14 },
    });
    assert.match(JSON.stringify(hover?.contents), /answer: number/);

    // A cancelled request rejects at once with the signal's reason; the server was told
    // with $/cancelRequest and the connection carries on.
    const controller = new AbortController();
    const cancelled = lsp.remote["textDocument/hover"]({
      textDocument: { uri },
      position: { line: 0, character: 7 },
    }, { signal: controller.signal });
    controller.abort(new Error("not needed"));
    await assert.rejects(cancelled, { message: "not needed" });
    const again = await lsp.remote["textDocument/hover"]({
      textDocument: { uri },
      position: { line: 0, character: 7 },
    });
    assert.match(JSON.stringify(again?.contents), /answer/);

    assert.equal(await lsp.remote.shutdown(), null);
    lsp.notify("exit", undefined);
  } finally {
    await lsp.close();
    await Deno.remove(dir, { recursive: true });
  }
  assert.deepEqual(protocolErrors, []);
});
