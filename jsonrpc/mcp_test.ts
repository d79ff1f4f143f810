// The MCP reference server (@modelcontextprotocol/server-everything) driven through
// openJsonRpc over its stdio.

import assert from "node:assert/strict";
import { openJsonRpc } from "./mod.ts";
import { spawnTransport } from "../transports/stdio.ts";
import { cachedNpm, npmProgramArgs, SERVER_EVERYTHING } from "./_test_npm.ts";
import type { McpServer, ToolResult } from "./_test_mcp.ts";

const have = cachedNpm(`${SERVER_EVERYTHING}/dist/tools/echo.js`, "MCP server-everything");

Deno.test({
  name: "jsonrpc: MCP server-everything: initialize, tools, progress, cancel, ping",
  ignore: !have,
  async fn() {
    const protocolErrors: unknown[] = [];
    const mcp = await openJsonRpc<McpServer>(
      spawnTransport(Deno.execPath(), {
        args: npmProgramArgs("run", ["-A", SERVER_EVERYTHING, "stdio"]),
        stderr: "discard",
      }),
      {
        framing: "ndjson",
        dialect: "mcp",
        onProtocolError: (error) => protocolErrors.push(error),
        handlers: { "notifications/message": () => {}, "roots/list": () => ({ roots: [] }) },
      },
    );
    try {
      const init = await mcp.remote.initialize({
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "conduit-test", version: "0.1.0" },
      });
      assert.match(init.serverInfo.name, /everything/i);
      mcp.notify("notifications/initialized", undefined);

      const { tools } = await mcp.remote["tools/list"]({});
      const names = tools.map((tool) => tool.name);
      for (const name of ["echo", "get-sum", "trigger-long-running-operation"]) {
        assert.ok(names.includes(name), `${name} in ${names}`);
      }

      const echo = await mcp.remote["tools/call"]({
        name: "echo",
        arguments: { message: "hi from conduit" },
      });
      assert.equal(echo.content[0].text, "Echo: hi from conduit");
      const sum = await mcp.remote["tools/call"]({ name: "get-sum", arguments: { a: 2, b: 40 } });
      assert.match(sum.content[0].text ?? "", /42/);

      // Progress: the call carries _meta.progressToken, the server's notifications/progress
      // naming it reach onProgress, in order, before the result.
      const progress: { progress: number; total: number }[] = [];
      const long = await mcp.remote["tools/call"]({
        name: "trigger-long-running-operation",
        arguments: { duration: 0.3, steps: 3 },
      }, { onProgress: (value) => progress.push(value as { progress: number; total: number }) });
      assert.match(long.content[0].text ?? "", /completed/);
      assert.deepEqual(progress.map((p) => [p.progress, p.total]), [[1, 3], [2, 3], [3, 3]]);

      // Cancel: rejects at once, the server gets notifications/cancelled, nothing answers it
      // (MCP), and the connection carries on.
      const controller = new AbortController();
      const seen: unknown[] = [];
      const cancelled = mcp.remote["tools/call"]({
        name: "trigger-long-running-operation",
        arguments: { duration: 30, steps: 30 },
      }, { signal: controller.signal, onProgress: (value) => seen.push(value) });
      await new Promise((resolve) => setTimeout(resolve, 1500));
      controller.abort(new Error("user gave up"));
      await assert.rejects(cancelled, { message: "user gave up" });
      assert.ok(seen.length >= 1, "some progress came before the cancel");

      assert.deepEqual(await mcp.remote.ping(), {});
      const unknown = mcp.remote["tools/call"]({ name: "no-such-tool", arguments: {} });
      const answer = await unknown.catch((error) => error);
      // The SDK reports an unknown tool either as a tool error or as a JSON-RPC error.
      assert.ok(
        (answer as ToolResult).isError === true || typeof (answer as { code?: unknown }).code ===
            "number",
      );
    } finally {
      await mcp.close();
    }
    assert.deepEqual(protocolErrors, []);
  },
});
