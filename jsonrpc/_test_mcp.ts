// The part of MCP the tests call, typed once for every MCP test (the reference server, Python's
// SDK, conduit's own example server).

/** What `tools/call` answers. */
export interface ToolResult {
  content: { type: string; text?: string }[];
  isError?: boolean;
}

/** An MCP server as the tests' client sees it. */
export interface McpServer {
  initialize(params: {
    protocolVersion: string;
    capabilities: object;
    clientInfo: { name: string; version: string };
  }): { protocolVersion: string; serverInfo: { name: string }; capabilities: object };
  "notifications/initialized"(): void;
  "tools/list"(params?: object): { tools: { name: string; inputSchema: object }[] };
  "tools/call"(params: { name: string; arguments: Record<string, unknown> }): ToolResult;
  ping(): Record<string, never>;
}
