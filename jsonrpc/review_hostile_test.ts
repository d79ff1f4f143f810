// Reviews of the day's JSON-RPC fixes: what they missed.

import assert from "node:assert/strict";
import { setup } from "./_test_raw_peer.ts";

const encoder = new TextEncoder();

Deno.test("review hostile: a cut error answer fits maxFrameBytes whatever its message's characters", async () => {
  // Control characters take 6 bytes each in JSON (`\u0001`): with the "…" after them the cut
  // answer went up to 3 bytes over the limit, so a peer with the same limit ended the connection.
  for (let maxFrameBytes = 4096; maxFrameBytes < 4102; maxFrameBytes++) {
    const { channel, peer } = await setup({
      maxFrameBytes,
      role: "server",
      handlers: {
        boom: () => {
          throw Object.assign(new Error("\u0001".repeat(5000)), { code: 7 });
        },
      },
    });
    await peer.send({ jsonrpc: "2.0", id: 1, method: "boom" });
    const reply = await peer.next() as { error: { code: number; message: string } };
    const bytes = encoder.encode(JSON.stringify(reply)).length;
    assert.equal(reply.error.code, 7);
    assert.ok(bytes <= maxFrameBytes, `${bytes} bytes over maxFrameBytes ${maxFrameBytes}`);
    await channel.close();
    await peer.close();
  }
});

Deno.test("review hostile: LSP progress that crosses a cancel reaches no $/progress handler", async () => {
  // The cancelled call's work-done token was dropped at the cancel while its partial-result
  // token is kept until the answer: progress sent before the server saw the cancel went to the
  // client's own $/progress handler (kept for servers' window/workDoneProgress tokens), with a
  // token conduit made. Before the engine forgot LSP calls at once, the call took it quietly.
  const seen: unknown[] = [];
  const { channel, peer, errors } = await setup<{ a(p: object): string }>({
    framing: "content-length",
    handlers: { "$/progress": (params: unknown) => void seen.push(params) },
  });
  const abort = new AbortController();
  const call = channel.remote.a({}, { signal: abort.signal, onProgress: () => {} });
  const request = await peer.next() as { id: number; params: { workDoneToken: string } };
  const token = request.params.workDoneToken;
  abort.abort();
  await assert.rejects(call);
  assert.equal((await peer.next() as { method: string }).method, "$/cancelRequest");
  await peer.send({
    jsonrpc: "2.0",
    method: "$/progress",
    params: { token, value: { kind: "report" } },
  });
  await peer.send({
    jsonrpc: "2.0",
    id: request.id,
    error: { code: -32800, message: "cancelled" },
  });
  // A request after them: both were read once it is answered.
  await peer.send({ jsonrpc: "2.0", id: 99, method: "$/unknown" });
  await peer.next();
  assert.deepEqual(seen, []);
  assert.deepEqual(errors, []);
  await channel.close();
  await peer.close();
});

Deno.test("review hostile: a cancel whose reason is over maxFrameBytes goes out cut, nothing thrown", async () => {
  // The MCP and LSP cancel notification carried the abort reason whole: over maxFrameBytes its
  // FrameTooLargeError was thrown from the abort listener, an uncaught error that ended the
  // program (a conduit CANCEL's reason is cut to fit, docs/protocol.md §8).
  for (const dialect of ["mcp", "lsp"] as const) {
    const { channel, peer } = await setup<{ a(p: object): string }>({
      maxFrameBytes: 1024,
      dialect,
      ...(dialect === "lsp" ? { framing: "content-length" } : {}),
    });
    const abort = new AbortController();
    const call = channel.remote.a({}, { signal: abort.signal });
    await peer.next();
    abort.abort(new Error("x".repeat(2000)));
    await assert.rejects(call, /x{100}/);
    const cancel = await peer.next() as { params: Record<string, unknown> };
    const bytes = encoder.encode(JSON.stringify(cancel)).length;
    assert.ok(bytes <= 1024, `${dialect}: ${bytes} bytes`);
    // LSP's $/cancelRequest carries no reason; MCP's carries it, cut.
    const reason = JSON.stringify(cancel.params);
    if (dialect === "mcp") assert.match(reason, /x{500,}…"/, reason.slice(0, 80));
    await channel.close();
    await peer.close();
  }
});
