// The other direction: conduit's MCP server (examples/mcp_server.ts, openJsonRpc over its
// stdio) driven by the official MCP TypeScript SDK's client and stdio client transport.

import assert from "node:assert/strict";
import { cachedNpm, MCP_SDK } from "./_test_npm.ts";

const have = cachedNpm(`${MCP_SDK}/client/stdio.js`, "MCP SDK client");
const server = new URL("../examples/mcp_server.ts", import.meta.url).pathname;

Deno.test({
  name: "jsonrpc: the official MCP SDK client drives a conduit MCP server over stdio",
  ignore: !have,
  async fn() {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
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
  },
});
