// The other direction: conduit's MCP server (examples/mcp_server.ts, openJsonRpc over its
// stdio) driven by the official MCP TypeScript SDK's client and stdio client transport.

import assert from "node:assert/strict";
import { cachedNpm, MCP_SDK, npmProgramArgs } from "./_test_npm.ts";

const have = cachedNpm(`${MCP_SDK}/client/stdio.js`, "MCP SDK client");
const client = new URL("./_test_mcp_sdk_client.ts", import.meta.url).pathname;

Deno.test({
  name: "jsonrpc: the official MCP SDK client drives a conduit MCP server over stdio",
  ignore: !have,
  async fn() {
    const { success, stderr } = await new Deno.Command(Deno.execPath(), {
      args: npmProgramArgs("run", ["-A", client]),
      stdout: "inherit",
      stderr: "piped",
    }).output();
    assert.ok(success, new TextDecoder().decode(stderr));
  },
});
