/**
 * A Language Server client on conduit: starts `deno lsp`, opens a file with a type error and
 * prints the diagnostics the server publishes, then shuts the server down.
 *
 *   deno run -A examples/lsp_diagnostics.ts [file.ts]
 *
 * @module
 */

import { openJsonRpc } from "@conduit/ipc/jsonrpc";
import { spawnTransport } from "@conduit/ipc/transports/stdio";

// The few LSP types this client needs, by hand.
interface Diagnostic {
  range: { start: { line: number; character: number } };
  message: string;
  code?: number | string;
}
interface LanguageServer {
  initialize(params: { processId: number; rootUri: string; capabilities: object }): {
    serverInfo?: { name: string; version?: string };
  };
  initialized(params: object): void;
  "textDocument/didOpen"(params: {
    textDocument: { uri: string; languageId: string; version: number; text: string };
  }): void;
  shutdown(): null;
  exit(): void;
}

const dir = await Deno.makeTempDir({ prefix: "conduit-lsp-example" });
const file = Deno.args[0] ?? `${dir}/main.ts`;
if (Deno.args[0] === undefined) {
  await Deno.writeTextFile(file, 'const answer: number = "forty-two";\n');
}
const uri = new URL(`file://${await Deno.realPath(file)}`).href;
const published = Promise.withResolvers<Diagnostic[]>();

const lsp = await openJsonRpc<LanguageServer>(
  spawnTransport(Deno.execPath(), { args: ["lsp"], cwd: dir, stderr: "discard" }),
  {
    framing: "content-length",
    handlers: {
      // deno lsp asks for its settings and waits for the answer.
      "workspace/configuration": ({ items }: { items: unknown[] }) =>
        items.map(() => ({ enable: true })),
      "textDocument/publishDiagnostics": (p: { uri: string; diagnostics: Diagnostic[] }) => {
        if (p.uri === uri) published.resolve(p.diagnostics);
      },
    },
  },
);

const { serverInfo } = await lsp.remote.initialize({
  processId: Deno.pid,
  rootUri: new URL(`file://${dir}/`).href,
  capabilities: { workspace: { configuration: true } },
});
lsp.notify("initialized", {});
lsp.notify("textDocument/didOpen", {
  textDocument: { uri, languageId: "typescript", version: 1, text: await Deno.readTextFile(file) },
});
const diagnostics = await published.promise;
console.log(`${serverInfo?.name}: ${diagnostics.length} diagnostic(s) in ${file}`);
for (const d of diagnostics) {
  console.log(
    `  ${d.range.start.line + 1}:${d.range.start.character + 1} TS${d.code} ${d.message}`,
  );
}
await lsp.remote.shutdown();
lsp.notify("exit", undefined);
await lsp.close();
await Deno.remove(dir, { recursive: true });
if (Deno.args[0] === undefined && !diagnostics.some((d) => d.code === 2322)) Deno.exit(1);
