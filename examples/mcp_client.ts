/**
 * An MCP client on conduit: spawns an MCP server (examples/mcp_server.ts), initializes,
 * lists its tools and calls two of them, one with progress reports.
 *
 *   deno run -A examples/mcp_client.ts
 *
 * @module
 */

import { openJsonRpc } from "@conduit/ipc/jsonrpc";
import { spawnTransport } from "@conduit/ipc/transports/stdio";

type ToolResult = { content: { type: string; text: string }[] };
interface McpServer {
  initialize(params: object): { serverInfo: { name: string } };
  "tools/list"(params: object): { tools: { name: string; description: string }[] };
  "tools/call"(params: { name: string; arguments: object }): ToolResult;
  "notifications/initialized"(params: object): void;
}

const server = new URL("./mcp_server.ts", import.meta.url).pathname;
await using mcp = await openJsonRpc<McpServer>(
  spawnTransport(Deno.execPath(), { args: ["run", "-A", server] }),
  { framing: "ndjson", dialect: "mcp" },
);

const { serverInfo } = await mcp.remote.initialize({
  protocolVersion: "2025-06-18",
  capabilities: {},
  clientInfo: { name: "conduit-example", version: "0.1.0" },
});
mcp.notify("notifications/initialized", {});
const { tools } = await mcp.remote["tools/list"]({});
console.log(`${serverInfo.name}: ${tools.map((tool) => tool.name).join(", ")}`);

const sum = await mcp.remote["tools/call"]({ name: "add", arguments: { a: 2, b: 40 } });
console.log(`add(2, 40) = ${sum.content[0].text}`);

const counted = await mcp.remote["tools/call"]({ name: "count", arguments: { to: 3 } }, {
  onProgress: (value) => console.log("progress", value),
});
console.log(counted.content[0].text);
if (sum.content[0].text !== "42" || counted.content[0].text !== "counted to 3") Deno.exit(1);
