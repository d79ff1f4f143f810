// What a hostile or sloppy JSON-RPC peer does to openJsonRpc, and what a demanding user of the
// LSP and MCP dialects expects of it: headers beside a progress token, progress nobody asked
// for, reporters that throw, error responses that bend the rules, ids without a method.

import assert from "node:assert/strict";
import type { CallContext } from "../channel/mod.ts";
import { memoryPair } from "../transports/memory.ts";
import {
  CONTENT_MODIFIED,
  handle,
  isRemoteErrorCode,
  openJsonRpc,
  SERVER_CANCELLED,
} from "./mod.ts";
import { setup } from "./_test_raw_peer.ts";

const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

Deno.test("jsonrpc hostile: MCP headers reach the handler beside a progress token or a _meta of the caller's", async () => {
  const handlers = {
    seen: (params: { _meta?: Record<string, unknown> }, ctx: CallContext) => ({
      headers: { ...ctx.headers },
      meta: params?._meta,
    }),
  };
  const [a, b] = memoryPair();
  const server = await openJsonRpc(a, { framing: "ndjson", dialect: "mcp", handlers });
  const client = await openJsonRpc<typeof handlers>(b, { framing: "ndjson", dialect: "mcp" });
  const headers = { traceparent: TRACEPARENT };
  // onProgress puts a progressToken in params._meta: the headers go there too.
  const withProgress = await client.remote.seen({}, { headers, onProgress: () => {} });
  assert.deepEqual(withProgress.headers, headers);
  assert.equal(typeof withProgress.meta?.progressToken, "string");
  // The caller's own _meta keeps its members; the headers join them.
  const own = await client.remote.seen({ _meta: { mine: 1 } }, { headers });
  assert.deepEqual(own.headers, headers);
  assert.deepEqual(own.meta, { traceparent: TRACEPARENT, mine: 1 });
  // "_meta" as a value, or deeper down, is no _meta of the params.
  for (const params of [{ note: "_meta" }, { args: { _meta: { x: 1 } } }]) {
    const deep = await client.remote.seen(params as object, { headers });
    assert.deepEqual(deep.headers, headers, JSON.stringify(params));
  }
  // A _meta that is no object is left as it is.
  const odd = await client.remote.seen({ _meta: "x" } as object, { headers });
  assert.deepEqual(odd.headers, {});
  assert.equal(odd.meta, "x");
  await Promise.all([client.close(), server.close()]);
});

Deno.test('jsonrpc hostile: progress for no call in flight is not "unhandled"; a progress handler still hears it', async () => {
  for (const dialect of ["lsp", "mcp"] as const) {
    const unhandled: string[] = [];
    const { channel, peer, errors } = await setup<{ run(p: object): string }>({
      dialect,
      onUnhandledNotification: (method) => unhandled.push(method),
    });
    const progress = (token: string, n: number) =>
      dialect === "lsp" ? { jsonrpc: "2.0", method: "$/progress", params: { token, value: n } } : {
        jsonrpc: "2.0",
        method: "notifications/progress",
        params: { progressToken: token, progress: n },
      };
    const seen: unknown[] = [];
    const controller = new AbortController();
    const run = channel.remote.run({}, {
      onProgress: (value) => seen.push(value),
      signal: controller.signal,
    });
    const request = await peer.next() as {
      id: number;
      params: { workDoneToken?: string; _meta?: { progressToken: string } };
    };
    const token = request.params.workDoneToken ?? request.params._meta!.progressToken;
    await peer.send(progress(token, 1));
    await peer.send({ jsonrpc: "2.0", id: request.id, result: "done" });
    assert.equal(await run, "done");
    // The call is over: its progress crossing the answer, and progress for a token nobody
    // issued, are dropped (the dialect's own notification, never "unhandled").
    await peer.send(progress(token, 2));
    await peer.send(progress("never-issued", 3));
    await peer.send({ jsonrpc: "2.0", method: "x/other", params: {} });
    // A notification after them tells they were read.
    const heard = Promise.withResolvers<unknown>();
    const stop = handle(channel, "x/mark", () => heard.resolve(undefined));
    await peer.send({ jsonrpc: "2.0", method: "x/mark", params: {} });
    await heard.promise;
    stop();
    assert.deepEqual(unhandled, ["x/other"], dialect);
    assert.equal(seen.length, 1);
    // A progress handler (an LSP client's for server-created workDoneProgress tokens) hears
    // progress no call of this side owns.
    const served = Promise.withResolvers<unknown>();
    handle(channel, dialect === "lsp" ? "$/progress" : "notifications/progress", (params) => {
      served.resolve(params);
    });
    await peer.send(progress("server-token", 4));
    assert.deepEqual(
      await served.promise,
      dialect === "lsp" ? { token: "server-token", value: 4 } : {
        progressToken: "server-token",
        progress: 4,
      },
    );
    assert.deepEqual(errors, []);
    await channel.close();
    await peer.close();
  }
});

Deno.test("jsonrpc hostile: an onNotificationError that throws does not take the connection down", async () => {
  const reported: string[] = [];
  const { channel, peer } = await setup({
    handlers: { ping: () => "pong" },
    onUnhandledNotification: () => {
      throw new Error("unhandled failed");
    },
    onNotificationError: (error) => {
      reported.push((error as Error).message);
      throw new Error("the reporter failed too");
    },
  });
  await peer.send([
    { jsonrpc: "2.0", id: 1, method: "ping" },
    { jsonrpc: "2.0", method: "no/handler" },
    { jsonrpc: "2.0", id: 2, method: "ping" },
  ]);
  assert.deepEqual(await peer.next(), [
    { jsonrpc: "2.0", id: 1, result: "pong" },
    { jsonrpc: "2.0", id: 2, result: "pong" },
  ]);
  await peer.send({ jsonrpc: "2.0", method: "no/handler" });
  await peer.send({ jsonrpc: "2.0", id: 3, method: "ping" });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 3, result: "pong" });
  assert.deepEqual(reported, ["unhandled failed", "unhandled failed"]);
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc hostile: an error response without a string message keeps its code and data", async () => {
  const { channel, peer, errors } = await setup<{ a(p: object): string }>({
    framing: "content-length",
  });
  const answer = async (error: unknown) => {
    const call = channel.remote.a({});
    const request = await peer.next() as { id: number };
    await peer.send({ jsonrpc: "2.0", id: request.id, error });
    return await call.then(() => assert.fail("resolved"), (e) => e);
  };
  const modified = await answer({ code: CONTENT_MODIFIED });
  assert.ok(isRemoteErrorCode(modified, CONTENT_MODIFIED), String(modified));
  assert.equal(typeof modified.message, "string");
  const cancelled = await answer({
    code: SERVER_CANCELLED,
    message: { text: "busy" },
    data: { retriggerRequest: true },
  });
  assert.ok(isRemoteErrorCode(cancelled, SERVER_CANCELLED), String(cancelled));
  assert.deepEqual(cancelled.data, { retriggerRequest: true });
  assert.match(cancelled.message, /busy/);
  // No numeric code: there is nothing to keep but the text.
  const malformed = await answer({ code: "-32601", message: "m" });
  assert.equal(malformed.code, -32603);
  assert.match(malformed.message, /A malformed JSON-RPC error/);
  assert.deepEqual(errors, []);
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc hostile: an id with neither a method, a result nor an error is not answered under that id", async () => {
  for (const role of [undefined, "client", "server"] as const) {
    const release = Promise.withResolvers<unknown>();
    const { channel, peer, errors } = await setup<{ shutdown(p?: object): void }>({
      framing: "content-length",
      role,
      handlers: { "workspace/configuration": () => release.promise },
    });
    // The peer's request 1 is in flight here when it answers this side's request 1 without
    // its result: an error for id 1 would be taken for the answer to its own request.
    await peer.send({ jsonrpc: "2.0", id: 1, method: "workspace/configuration", params: {} });
    const call = channel.remote.shutdown(undefined, { timeout: 5_000 });
    const request = await peer.next() as { id: number };
    assert.equal(request.id, 1);
    await peer.send({ jsonrpc: "2.0", id: 1 });
    await assert.rejects(call, {
      name: "RemoteError",
      message: "A JSON-RPC response with neither a result nor an error",
    });
    // One with no request of this side in flight: reported, not answered.
    await peer.send({ jsonrpc: "2.0", id: "stray" });
    release.resolve([{ tabSize: 2 }]);
    assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 1, result: [{ tabSize: 2 }] });
    assert.deepEqual(errors.map((error) => error.message), [
      'A message with the id "stray" and neither a method, a result nor an error, not ' +
      "answered: the peer would take an answer for the one to its own request",
    ], role);
    await channel.close();
    await peer.close();
  }
});

Deno.test("jsonrpc hostile: a request that lacks only its method is answered -32600 under its id", async () => {
  const { channel, peer } = await setup({ framing: "content-length" });
  // It carries params: a request whose method is missing, not a response without its result.
  await peer.send({ jsonrpc: "2.0", id: 7, params: { a: 1 } });
  const answer = await peer.next() as { id: number; error?: { code: number } };
  assert.equal(answer.id, 7);
  assert.equal(answer.error?.code, -32600);
  await channel.close();
  await peer.close();
});
