// What openJsonRpc takes from a peer as vscode-jsonrpc and the MCP SDKs do: a late answer to a
// cancelled request, a response without "jsonrpc", unparseable output from a server.

import assert from "node:assert/strict";
import { memoryPair } from "../transports/memory.ts";
import { spawnTransport } from "../transports/stdio.ts";
import { openJsonRpc, type ProtocolError } from "./mod.ts";
import { setup } from "./_test_raw_peer.ts";

Deno.test("jsonrpc leniency: an answer that crossed an MCP cancel is dropped without a word", async () => {
  const { channel, peer, errors } = await setup<
    { slow(p: object): string; fast(p: object): string }
  >(
    { dialect: "mcp" },
  );
  const controller = new AbortController();
  const slow = channel.remote.slow({}, { signal: controller.signal });
  const request = await peer.next() as { id: number };
  controller.abort(new Error("enough"));
  await assert.rejects(slow, { message: "enough" });
  assert.equal((await peer.next() as { method: string }).method, "notifications/cancelled");
  // The server's answer crossed the cancel (mcp 1.x answers cancelled requests anyway).
  await peer.send({ jsonrpc: "2.0", id: request.id, result: "late" });
  await peer.send({ jsonrpc: "2.0", id: request.id, error: { code: 0, message: "twice" } });
  const fast = channel.remote.fast({});
  const next = await peer.next() as { id: number };
  await peer.send({ jsonrpc: "2.0", id: next.id, result: "ok" });
  assert.equal(await fast, "ok");
  // The first late answer is expected; a second one for the same id is not.
  assert.deepEqual(errors.map((error) => error.message), [
    `A response for id ${request.id}, which no request in flight has`,
  ]);
  await channel.close();
  await peer.close();
});

Deno.test('jsonrpc leniency: a response without "jsonrpc" is taken, reported once, never answered', async () => {
  const { channel, peer, errors } = await setup<{ a(p: object): string; b(p: object): string }>({
    handlers: { ping: () => "pong" },
  });
  const a = channel.remote.a({});
  const first = await peer.next() as { id: number };
  await peer.send({ id: first.id, result: "A" });
  assert.equal(await a, "A");
  const b = channel.remote.b({});
  const second = await peer.next() as { id: number };
  await peer.send({ jsonrpc: "1.0", id: second.id, error: { code: 7, message: "no" } });
  await assert.rejects(b, { name: "RemoteError", code: 7, message: "no" });
  // Nothing was answered: the next message the peer reads answers its own request.
  await peer.send({ jsonrpc: "2.0", id: 1, method: "ping" });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 1, result: "pong" });
  assert.deepEqual(errors.map((error) => error.message), [
    `A response whose "jsonrpc" is missing, not "2.0" (id ${first.id}): taken as ` +
    `vscode-jsonrpc takes it; further ones on this connection are not reported`,
  ]);
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc leniency: a client reports a server's junk on stdout and answers nothing for it", async () => {
  // The server prints a line that is not JSON, then asks the client a question; it exits 0
  // when the first line it reads is the answer to that question, 1 with that line otherwise.
  const server = `
    const out = new TextEncoder();
    await Deno.stdout.write(out.encode("starting up...\\n{not json either\\n"));
    await Deno.stdout.write(out.encode(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) + "\\n"));
    const lines = Deno.stdin.readable.pipeThrough(new TextDecoderStream()).values();
    let line = "";
    for await (const chunk of lines) {
      line += chunk;
      if (line.includes("\\n")) break;
    }
    const first = JSON.parse(line.slice(0, line.indexOf("\\n")));
    if (first.id === 1 && first.result === "pong") Deno.exit(0);
    console.error(line);
    Deno.exit(1);
  `;
  const child = spawnTransport(Deno.execPath(), { args: ["eval", server], stderr: "inherit" });
  const errors: ProtocolError[] = [];
  const channel = await openJsonRpc(child, {
    framing: "ndjson",
    handlers: { ping: () => "pong" },
    onProtocolError: (error) => errors.push(error),
  });
  assert.equal((await child.status).code, 0);
  await channel.closed;
  assert.deepEqual(errors.map((error) => error.message), [
    "A message that is not JSON (14 bytes), not answered: this side is the client (role)",
    "A message that is not JSON (16 bytes), not answered: this side is the client (role)",
  ]);
});

Deno.test('jsonrpc leniency: role "client" answers no id null; role "server" answers -32700', async () => {
  for (const role of ["client", "server"] as const) {
    const { channel, peer, errors } = await setup({ role, handlers: { ping: () => "pong" } });
    await peer.send("{oops");
    await peer.send([]);
    await peer.send({ jsonrpc: "2.0", id: 1, method: "ping" });
    if (role === "server") {
      assert.equal((await peer.next() as { error: { code: number } }).error.code, -32700);
      assert.equal((await peer.next() as { error: { code: number } }).error.code, -32600);
    }
    assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 1, result: "pong" });
    assert.equal(errors.length, 2);
    await channel.close();
    await peer.close();
  }
  await assert.rejects(
    openJsonRpc(memoryPair()[0], { framing: "ndjson", role: "peer" as "client" }),
    { name: "TypeError", message: 'role must be "client" or "server", got "peer"' },
  );
});

Deno.test('jsonrpc leniency: a result beside "error": null is the answer, as JSON-RPC 1.0 writes it', async () => {
  const { channel, peer } = await setup<{ a(p: object): number; b(p: object): number }>({});
  const a = channel.remote.a({});
  const first = await peer.next() as { id: number };
  await peer.send(`{"id":${first.id},"result":5,"error":null}`);
  assert.equal(await a, 5);
  // Without a result, a null error is still no answer to take.
  const b = channel.remote.b({});
  const second = await peer.next() as { id: number };
  await peer.send(`{"jsonrpc":"2.0","id":${second.id},"error":null}`);
  await assert.rejects(b, { name: "RemoteError" });
  await channel.close();
  await peer.close();
});
