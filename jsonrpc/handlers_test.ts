// Catch-all handlers and handlers added after open, as vscode-jsonrpc has them: star request
// handlers, onUnhandledNotification, and handle() returning what removes it.

import assert from "node:assert/strict";
import type { CallContext } from "../channel/mod.ts";
import { handle } from "./mod.ts";
import { setup } from "./_test_raw_peer.ts";

Deno.test("jsonrpc handlers: notifications no handler serves reach onUnhandledNotification", async () => {
  const unhandled: unknown[] = [];
  const served: unknown[] = [];
  const { channel, peer } = await setup({
    dialect: "lsp",
    handlers: { "window/logMessage": (params: unknown) => void served.push(params) },
    onUnhandledNotification: (method, params) => unhandled.push([method, params]),
  });
  await peer.send({ jsonrpc: "2.0", method: "window/logMessage", params: { m: 1 } });
  await peer.send({ jsonrpc: "2.0", method: "$/unknown", params: { x: 1 } });
  await peer.send({ jsonrpc: "2.0", method: "telemetry/event", params: [2] });
  // The dialect's own notifications are not "unhandled": a cancel of nothing is dropped.
  await peer.send({ jsonrpc: "2.0", method: "$/cancelRequest", params: { id: 99 } });
  await peer.send({ jsonrpc: "2.0", id: 1, method: "nope" });
  assert.equal((await peer.next() as { error: { code: number } }).error.code, -32601);
  assert.deepEqual(served, [{ m: 1 }]);
  assert.deepEqual(unhandled, [["$/unknown", { x: 1 }], ["telemetry/event", [2]]]);
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc handlers: onRequest serves every request no handler serves", async () => {
  const { channel, peer } = await setup({
    handlers: { known: () => "known" },
    onRequest: (method: string, params: unknown, ctx: CallContext) => {
      if (method === "refuse") throw Object.assign(new Error("not here"), { code: -32601 });
      return { method, params, ctxMethod: ctx.method };
    },
  });
  await peer.send({ jsonrpc: "2.0", id: 1, method: "known" });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 1, result: "known" });
  await peer.send({ jsonrpc: "2.0", id: 2, method: "any/thing", params: { a: 1 } });
  assert.deepEqual(await peer.next(), {
    jsonrpc: "2.0",
    id: 2,
    result: { method: "any/thing", params: { a: 1 }, ctxMethod: "any/thing" },
  });
  await peer.send({ jsonrpc: "2.0", id: 3, method: "refuse" });
  assert.deepEqual(await peer.next(), {
    jsonrpc: "2.0",
    id: 3,
    error: { code: -32601, message: "not here" },
  });
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc handlers: handle() adds, replaces and removes a handler after open", async () => {
  class Server {
    readonly greeting = "hello";
    greet(): string {
      return this.greeting;
    }
  }
  const { channel, peer } = await setup({ handlers: new Server() });
  await peer.send({ jsonrpc: "2.0", id: 1, method: "greet" });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 1, result: "hello" });
  const stopAdd = handle(channel, "add", ([a, b]: [number, number]) => a + b);
  await peer.send({ jsonrpc: "2.0", id: 2, method: "add", params: [1, 2] });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 2, result: 3 });
  const stopGreet = handle(channel, "greet", () => "replaced");
  await peer.send({ jsonrpc: "2.0", id: 3, method: "greet" });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 3, result: "replaced" });
  stopAdd();
  stopGreet();
  for (const id of [4, 5]) {
    await peer.send({ jsonrpc: "2.0", id, method: id === 4 ? "add" : "greet", params: [1, 2] });
    assert.equal((await peer.next() as { error: { code: number } }).error.code, -32601);
  }
  // Notifications too: added, then removed.
  const notes: unknown[] = [];
  const stopNote = handle(channel, "note", (params: unknown) => void notes.push(params));
  await peer.send({ jsonrpc: "2.0", method: "note", params: [1] });
  stopNote();
  await peer.send({ jsonrpc: "2.0", method: "note", params: [2] });
  await peer.send({ jsonrpc: "2.0", id: 6, method: "x" });
  await peer.next();
  assert.deepEqual(notes, [[1]]);
  assert.throws(() => handle({}, "x", () => 1), {
    name: "TypeError",
    message: "Not a JSON-RPC channel: open it with openJsonRpc()",
  });
  await channel.close();
  await peer.close();
});
