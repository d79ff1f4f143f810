// Python's official MCP SDK, 1.x and 2.x (each in its own venv that .ci/run makes under
// .tools/), against conduit both ways: its client drives conduit's MCP server
// (examples/mcp_server.ts), and conduit's client drives its server (FastMCP in 1.x,
// MCPServer in 2.x), both through interop/python/mcp_peer.py.

import assert from "node:assert/strict";
import { openJsonRpc } from "./mod.ts";
import { spawnTransport } from "../transports/stdio.ts";
import type { McpServer } from "./_test_mcp.ts";

const root = new URL("../", import.meta.url).pathname;
const peer = `${root}interop/python/mcp_peer.py`;
const conduitServer = `${root}examples/mcp_server.ts`;

/** What mcp_peer.py's client mode prints. */
interface PythonClientSaw {
  mcp: string;
  server: string;
  tools: string[];
  add: string;
  count?: string;
  count_progress_before_cancel: number;
  add_after_cancel: string;
}

for (const [major, pin] of [[1, "1.30.0"], [2, "2.3.0"]] as const) {
  const python = `${root}.tools/venv-mcp${major}/bin/python`;
  const missing = mcpMissing(python, pin);

  Deno.test({
    name: `jsonrpc: Python mcp ${pin}'s client drives conduit's MCP server (list, call, cancel)`,
    ignore: missing,
    async fn() {
      const dir = await Deno.makeTempDir({ prefix: "conduit-mcp-py" });
      const errFile = `${dir}/conduit-stderr.txt`;
      try {
        const { success, stdout, stderr } = await new Deno.Command(python, {
          args: [peer, "client", errFile, Deno.execPath(), "run", "-A", conduitServer],
          stdin: "null",
        }).output();
        const text = new TextDecoder();
        assert.ok(success, `mcp_peer.py client failed:\n${text.decode(stderr)}`);
        const saw = JSON.parse(text.decode(stdout)) as PythonClientSaw;
        assert.equal(saw.mcp, pin);
        assert.equal(saw.server, "conduit-mcp-example");
        assert.deepEqual(saw.tools, ["add", "count"]);
        assert.equal(saw.add, "42");
        assert.equal(saw.count, undefined, "the count of 1000 was cancelled, not finished");
        assert.ok(saw.count_progress_before_cancel >= 1);
        assert.equal(saw.add_after_cancel, "2");
        // The cancel reached conduit's handler and conduit said nothing about it.
        assert.equal(await Deno.readTextFile(errFile), "");
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });

  Deno.test({
    name: `jsonrpc: conduit's client drives a Python mcp ${pin} server (list, call, cancel)`,
    ignore: missing,
    async fn() {
      const protocolErrors: Error[] = [];
      const stderr: string[] = [];
      const cancelledSeen = Promise.withResolvers<void>();
      const child = spawnTransport(python, {
        args: [peer, "server"],
        stderr: (line) => {
          stderr.push(line);
          if (line === "slow: cancelled") cancelledSeen.resolve();
        },
      });
      const mcp = await openJsonRpc<McpServer>(child, {
        framing: "ndjson",
        dialect: "mcp",
        onProtocolError: (error) => protocolErrors.push(error),
        handlers: { "notifications/message": () => {} },
      });
      try {
        const init = await mcp.remote.initialize({
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "conduit-test", version: "0.1.0" },
        });
        assert.equal(init.serverInfo.name, "python-mcp-peer");
        mcp.notify("notifications/initialized", undefined);

        const { tools } = await mcp.remote["tools/list"]({});
        assert.deepEqual(tools.map((tool) => tool.name).sort(), ["add", "slow"]);
        const sum = await mcp.remote["tools/call"]({ name: "add", arguments: { a: 2, b: 40 } });
        assert.equal(sum.content[0].text, "42");

        const progress: number[] = [];
        const done = await mcp.remote["tools/call"]({ name: "slow", arguments: { steps: 3 } }, {
          onProgress: (value) => progress.push((value as { progress: number }).progress),
        });
        assert.equal(done.content[0].text, "slow: 3 steps");
        assert.deepEqual(progress, [1, 2, 3]);

        // Cancel after the first progress: the call rejects at once with the signal's reason,
        // Python's tool sees the cancellation, and the connection carries on.
        const controller = new AbortController();
        const cancelled = mcp.remote["tools/call"]({ name: "slow", arguments: { steps: 1000 } }, {
          signal: controller.signal,
          onProgress: () => controller.abort(new Error("the test gave up")),
        });
        await assert.rejects(cancelled, { message: "the test gave up" });
        await cancelledSeen.promise;
        const again = await mcp.remote["tools/call"]({ name: "add", arguments: { a: 1, b: 1 } });
        assert.equal(again.content[0].text, "2");
      } finally {
        await mcp.close();
      }
      assert.equal((await child.status).success, true, stderr.join("\n"));
      // mcp 1.x answers a cancelled request anyway ({"code":0,"message":"Request cancelled"});
      // MCP says the sender ignores such an answer: conduit drops it without a report.
      assert.deepEqual(protocolErrors.map((error) => error.message), []);
    },
  });
}

/** Whether `python` (a venv .ci/run makes) lacks mcp `pin`; says so, naming it, if it does. */
function mcpMissing(python: string, pin: string): boolean {
  let found: string | undefined;
  try {
    const { success, stdout } = new Deno.Command(python, {
      args: ["-c", "from importlib.metadata import version; print(version('mcp'))"],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).outputSync();
    if (success) found = new TextDecoder().decode(stdout).trim();
  } catch {
    // No venv: said below.
  }
  if (found === pin) return false;
  console.warn(
    `skipping the Python mcp ${pin} tests: ${python} ` +
      (found === undefined ? "cannot import mcp" : `has mcp ${found}`) +
      ` (.ci/run makes the venv: python3 -m venv ... && pip install mcp==${pin})`,
  );
  return true;
}
