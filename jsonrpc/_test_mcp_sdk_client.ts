// The official MCP SDK's client driving conduit's MCP server example, run by mcp_sdk_test.ts in
// a process of its own: the SDK resolves against testdata/npm_programs.lock, not deno.lock
// (see _test_npm.ts). The specifiers are built at run time so that type checking the package
// does not resolve them either. Exits non-zero, the failure on stderr, when an assertion fails.

import assert from "node:assert/strict";
import { MCP_SDK } from "./_test_npm.ts";

const { Client } = await import(`${MCP_SDK}/client/index.js`);
const { StdioClientTransport } = await import(`${MCP_SDK}/client/stdio.js`);
const server = new URL("../examples/mcp_server.ts", import.meta.url).pathname;

const client = new Client({ name: "sdk-test", version: "1.0.0" });
const transport = new StdioClientTransport({
  command: Deno.execPath(),
  args: ["run", "-A", server],
  stderr: "inherit",
});
await client.connect(transport);
try {
  assert.equal(client.getServerVersion()?.name, "conduit-mcp-example");
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((tool: { name: string }) => tool.name).sort(), ["add", "count"]);

  const sum = await client.callTool({ name: "add", arguments: { a: 2, b: 40 } });
  assert.deepEqual(sum.content, [{ type: "text", text: "42" }]);

  const progress: number[] = [];
  const counted = await client.callTool(
    { name: "count", arguments: { to: 4 } },
    undefined,
    { onprogress: (p: { progress: number }) => progress.push(p.progress) },
  );
  assert.deepEqual(counted.content, [{ type: "text", text: "counted to 4" }]);
  // conduit writes all four before the result (jsonrpc_test checks the order on the
  // wire); the SDK runs notification handlers a microtask later but settles a response
  // at once, so one read holding the last progress and the result loses that progress.
  assert.ok(progress.length >= 3, `progress ${progress}`);
  assert.deepEqual(progress, [1, 2, 3, 4].slice(0, progress.length));

  // The SDK cancels with notifications/cancelled; the handler's signal stops it and the
  // server carries on.
  const controller = new AbortController();
  const cancelled = client.callTool(
    { name: "count", arguments: { to: 1000 } },
    undefined,
    { signal: controller.signal },
  );
  setTimeout(() => controller.abort(new Error("stop")), 100);
  await assert.rejects(cancelled);
  await client.ping();

  // A JSON-RPC error from a handler reaches the SDK with its code.
  await assert.rejects(
    client.callTool({ name: "nope", arguments: {} }),
    (error: { code?: number }) => error.code === -32602,
  );
} finally {
  await client.close();
}
