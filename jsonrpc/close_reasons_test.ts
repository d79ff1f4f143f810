// How a JSON-RPC connection's end reads: the option a limit comes from, a message cut short,
// and a peer that went away, in JSON-RPC's words.

import assert from "node:assert/strict";
import { spawnTransport } from "../transports/stdio.ts";
import { memoryPair } from "../transports/memory.ts";
import { openJsonRpc } from "./mod.ts";
import { setup } from "./_test_raw_peer.ts";

Deno.test("jsonrpc close: an NDJSON line over the limit names maxFrameBytes, the option set", async () => {
  const { channel, peer } = await setup<{ wait(p: object): string }>({ maxFrameBytes: 1024 });
  const pending = channel.remote.wait({});
  await peer.next();
  await peer.send({ jsonrpc: "2.0", method: "x", params: { pad: "y".repeat(2000) } });
  const error = await pending.then(() => undefined, (error) => error);
  assert.equal(error.name, "ConnectionClosedError");
  assert.match(error.message, /exceeds maxFrameBytes \(1024\)$/);
  await channel.closed.catch(() => {});
  await peer.close();
});

Deno.test("jsonrpc close: input ending inside an NDJSON line fails as Content-Length's does", async () => {
  for (const framing of ["ndjson", "content-length"] as const) {
    const { channel, peer } = await setup<{ wait(p: object): string }>({ framing });
    const pending = channel.remote.wait({});
    const request = await peer.next() as { id: number };
    const answer = JSON.stringify({ jsonrpc: "2.0", id: request.id, result: "ok" });
    await peer.raw(
      framing === "ndjson"
        ? answer.slice(0, 20)
        : `Content-Length: 60\r\n\r\n${answer.slice(0, 20)}`,
    );
    await peer.close();
    const error = await pending.then(() => undefined, (error) => error);
    assert.equal(error.name, "ConnectionClosedError", framing);
    // Each says what it was inside and how much of it came: NDJSON has no length to miss.
    assert.equal(
      error.message,
      framing === "ndjson"
        ? "Protocol error: Stream ended mid-frame: inside a line of 20 bytes, before its newline"
        : "Protocol error: Stream ended mid-frame: 40 more byte(s) were expected",
    );
    assert.equal(error.cause.cause.name, "TruncatedFrameError");
    await channel.closed.catch(() => {});
  }
});

Deno.test("jsonrpc close: a server that dies is named so, with its exit status", async () => {
  // The server reads one request, then exits with status 3 (or kills itself) unanswered.
  for (
    const [exit, words] of [
      ["Deno.exit(3)", "exited with status 3"],
      ['Deno.kill(Deno.pid, "SIGKILL")', "was killed by SIGKILL"],
    ]
  ) {
    const server = `
      const reader = Deno.stdin.readable.getReader();
      await reader.read();
      ${exit};
    `;
    const channel = await openJsonRpc<{ work(p: object): string }>(
      spawnTransport(Deno.execPath(), { args: ["eval", server] }),
      { framing: "ndjson" },
    );
    const error = await channel.remote.work({}).then(() => undefined, (error) => error);
    assert.equal(error.name, "ConnectionClosedError");
    assert.equal(error.message, `The server closed the connection: its process ${words}`);
    await channel.closed.catch(() => {});
  }
});

Deno.test("jsonrpc close: a peer that goes away is named by the role, without a GOODBYE", async () => {
  for (const [role, words] of [[undefined, "The peer"], ["server", "The client"]] as const) {
    const { channel, peer } = await setup<{ work(p: object): string }>({ role });
    const work = channel.remote.work({});
    await peer.next();
    await peer.close();
    await assert.rejects(work, {
      name: "ConnectionClosedError",
      message: `${words} closed the connection`,
    });
    await channel.closed.catch(() => {});
  }
});

Deno.test("jsonrpc close: abort() and close() settle while a write waits on a peer that reads nothing", async () => {
  for (const end of ["abort", "close"] as const) {
    const [a, b] = memoryPair();
    const server = await openJsonRpc(a, {
      framing: "ndjson",
      drainTimeout: 100,
      handlers: { big: () => "a".repeat(8 * 1024 * 1024) },
    });
    const writer = b.writable.getWriter();
    await writer.write(new TextEncoder().encode(`{"jsonrpc":"2.0","id":1,"method":"big"}\n`));
    // The 8 MiB answer is written into a stream nobody reads: its write never finishes.
    while (server.desiredSize > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 100)); // the write has begun
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([
      (end === "abort" ? server.abort() : server.close()).then(() => "settled", () => "settled"),
      new Promise<string>((resolve) => timer = setTimeout(resolve, 10_000, "still pending")),
    ]);
    clearTimeout(timer);
    writer.releaseLock();
    await b.abort().catch(() => {});
    await server.closed.catch(() => {});
    assert.equal(outcome, "settled", end);
  }
});
