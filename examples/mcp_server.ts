/**
 * A minimal MCP server on conduit, over its stdio: two tools, `add` and `count` (which
 * reports progress and stops when the client cancels). Any MCP client can spawn it —
 * `examples/mcp_client.ts` does, and so does the official TypeScript SDK's stdio client in
 * jsonrpc/mcp_sdk_test.ts. It ends when its stdin closes.
 *
 *   deno run -A examples/mcp_server.ts
 *
 * @module
 */

import type { CallContext } from "@conduit/ipc/channel";
import { openJsonRpc, progressToken, sendProgress } from "@conduit/ipc/jsonrpc";
import { stdioTransport } from "@conduit/ipc/transports/stdio";

type ToolCall = { name: string; arguments?: Record<string, unknown>; _meta?: object };

const tools = [
  {
    name: "add",
    description: "Adds two numbers",
    inputSchema: {
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    },
  },
  {
    name: "count",
    description: "Counts to `to`, one step every 20 ms, reporting progress",
    inputSchema: { type: "object", properties: { to: { type: "number" } }, required: ["to"] },
  },
];

const text = (value: string) => ({ content: [{ type: "text", text: value }] });

const handlers = {
  initialize: (params: { protocolVersion: string }) => ({
    protocolVersion: params.protocolVersion,
    capabilities: { tools: {} },
    serverInfo: { name: "conduit-mcp-example", version: "0.1.0" },
  }),
  "notifications/initialized": () => {},
  ping: () => ({}),
  "tools/list": () => ({ tools }),
  async "tools/call"(params: ToolCall, ctx: CallContext) {
    const args = params.arguments ?? {};
    if (params.name === "add") return text(String(Number(args.a) + Number(args.b)));
    if (params.name === "count") {
      const to = Number(args.to);
      const token = progressToken(ctx.channel, params);
      for (let i = 1; i <= to; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        ctx.signal.throwIfAborted();
        sendProgress(ctx.channel, token, { progress: i, total: to });
      }
      return text(`counted to ${to}`);
    }
    throw Object.assign(new Error(`Unknown tool: ${params.name}`), { code: -32602 });
  },
};

const server = await openJsonRpc(stdioTransport(), { framing: "ndjson", handlers });
// The client closing our stdin ends the connection; that is how MCP over stdio ends.
await server.closed;
