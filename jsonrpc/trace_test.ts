// The wire trace of a JSON-RPC channel: one line per message, both ways, with a response's
// time since its request; and interceptors around its requests.

import assert from "node:assert/strict";
import { memoryPair } from "../transports/memory.ts";
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
