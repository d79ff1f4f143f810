// The wire trace of a JSON-RPC channel: one line per message, both ways, with a response's
// time since its request; and interceptors around its requests.

import assert from "node:assert/strict";
import { memoryPair } from "../transports/memory.ts";
import type { CallContext } from "../channel/call_context.ts";
import { openJsonRpc } from "./mod.ts";

Deno.test("jsonrpc trace: requests, responses, errors and notifications, line by line", async () => {
  const lines: string[] = [];
  const handlers = {
    add: ({ a, b }: { a: number; b: number }) => a + b,
    fail: () => {
      throw new RangeError("no");
    },
    note: (_: { text: string }) => {},
  };
  const [a, b] = memoryPair();
  const seen: string[] = [];
  const [server, client] = await Promise.all([
    openJsonRpc(a, {
      framing: "ndjson",
      role: "server",
      handlers,
      interceptors: [{
        handle: (call, next) => {
          seen.push(call.method);
          return next(call);
        },
      }],
    }),
    openJsonRpc<typeof handlers>(b, {
      framing: "ndjson",
      role: "client",
      trace: (line) => lines.push(line),
    }),
  ]);
  assert.equal(await client.remote.add({ a: 1, b: 2 }), 3);
  await assert.rejects(client.remote.fail());
  client.notify("note", { text: "hi" });
  await client.remote.add({ a: 2, b: 2 });
  await Promise.all([client.close(), server.close()]);
  assert.deepEqual(seen, ["add", "fail", "add"]);
  const shown = lines.map((line) => line.replace(/\(\+\d+\.\d ms\)/, "(+T ms)"));
  assert.deepEqual(shown.map((line) => line.replace(/ \d+ B .*/, "")), [
    "jsonrpc → REQUEST 1 add",
    "jsonrpc ← RESULT 1 (+T ms)",
    "jsonrpc → REQUEST 2 fail",
    "jsonrpc ← ERROR 2 code -32603 (+T ms)",
    "jsonrpc → NOTIFICATION note",
    "jsonrpc → REQUEST 3 add",
    "jsonrpc ← RESULT 3 (+T ms)",
  ]);
  assert.equal(
    lines[0],
    'jsonrpc → REQUEST 1 add 62 B {"jsonrpc":"2.0","method":"add","id":1,"params":{"a":1,"b":2}}',
  );
});

Deno.test("jsonrpc mcp: call headers travel in params._meta and reach ctx.headers", async () => {
  const lines: string[] = [];
  const handlers = {
    seen: (_: { n: number } | undefined, ctx: CallContext) => ({ ...ctx.headers }),
  };
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openJsonRpc(a, { framing: "ndjson", dialect: "mcp", role: "server", handlers }),
    openJsonRpc<typeof handlers>(b, {
      framing: "ndjson",
      dialect: "mcp",
      role: "client",
      trace: (line) => lines.push(line),
    }),
  ]);
  const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  assert.deepEqual(await client.remote.seen({ n: 1 }, { headers: { traceparent } }), {
    traceparent,
  });
  assert.deepEqual(await client.remote.seen(undefined, { headers: { traceparent } }), {
    traceparent,
  });
  assert.deepEqual(await client.remote.seen({ n: 2 }), {});
  await Promise.all([client.close(), server.close()]);
  assert.ok(
    lines[0].endsWith(`"params":{"_meta":{"traceparent":"${traceparent}"},"n":1}}`),
    lines[0],
  );
});

Deno.test("jsonrpc lsp: a dialect without _meta sends no headers", async () => {
  const handlers = { seen: (_: { n: number }, ctx: CallContext) => ({ ...ctx.headers }) };
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openJsonRpc(a, { framing: "content-length", dialect: "lsp", role: "server", handlers }),
    openJsonRpc<typeof handlers>(b, { framing: "content-length", dialect: "lsp", role: "client" }),
  ]);
  assert.deepEqual(await client.remote.seen({ n: 1 }, { headers: { a: "b" } }), {});
  await Promise.all([client.close(), server.close()]);
});
