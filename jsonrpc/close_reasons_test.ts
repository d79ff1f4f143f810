// How a JSON-RPC connection's end reads: the option a limit comes from, a message cut short,
// and a peer that went away, in JSON-RPC's words; and when `closed` resolves (a peer ending its
// input between messages, none of this side's calls unanswered) where conduit's wire rejects.

import assert from "node:assert/strict";
import { spawnTransport } from "../transports/stdio.ts";
import { memoryPair } from "../transports/memory.ts";
import { openJsonRpc } from "./mod.ts";
import { setup } from "./_test_raw_peer.ts";
import { RawPeer as ConduitPeer } from "../channel/_test_raw_peer.ts";
import { openChannel } from "../channel/channel.ts";
import { jsonCodec } from "../codecs/json.ts";
import { TruncatedFrameError } from "../errors.ts";
import type { CallContext } from "../channel/call_context.ts";

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
    await assert.rejects(channel.closed, { name: "ConnectionClosedError", message: error.message });
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
    await assert.rejects(channel.closed, { name: "ConnectionClosedError", message: error.message });
  }
});

Deno.test("jsonrpc close: a server process that fails between messages is no clean end", async () => {
  // Nothing of ours is pending when it goes: its exit status alone says it did not end well.
  for (
    const [exit, words] of [
      ["Deno.exit(3)", "exited with status 3"],
      ['Deno.kill(Deno.pid, "SIGKILL")', "was killed by SIGKILL"],
    ]
  ) {
    const channel = await openJsonRpc(
      spawnTransport(Deno.execPath(), { args: ["eval", exit] }),
      { framing: "ndjson" },
    );
    await assert.rejects(channel.closed, {
      name: "ConnectionClosedError",
      message: `The server closed the connection: its process ${words}`,
    });
  }
});

Deno.test("jsonrpc close: a server process that ends its output but has not exited is no clean end", async () => {
  // Its exit status is not known when its output ends (it exits with 3 later, or never): only
  // a process seen to exit with 0 said goodbye.
  const channel = await openJsonRpc(
    spawnTransport("sh", { args: ["-c", "exec 1>&-; sleep 0.8; exit 3"] }),
    { framing: "ndjson" },
  );
  await assert.rejects(channel.closed, {
    name: "ConnectionClosedError",
    message: "The server closed the connection",
  });
});

Deno.test("jsonrpc close: a peer that goes away is named by the role, without a GOODBYE", async () => {
  for (const [role, words] of [[undefined, "The peer"], ["server", "The client"]] as const) {
    const { channel, peer } = await setup<{ work(p: object): string }>({ role });
    const work = channel.remote.work({});
    await peer.next();
    await peer.close();
    const closing = { name: "ConnectionClosedError", message: `${words} closed the connection` };
    await assert.rejects(work, closing);
    // A call of this side's left unanswered: the end was not a clean one.
    await assert.rejects(channel.closed, closing);
  }
});

Deno.test("jsonrpc close: a client that ends its input between messages is a clean end: closed resolves", async () => {
  // Everything it sent was answered and its notifications have run: nothing is lost.
  const noted: number[] = [];
  const { channel, peer } = await setup<{ work(p: object): string }>({
    role: "server",
    handlers: {
      echo: (params: object) => params,
      note: ({ n }: { n: number }) => void noted.push(n),
    },
  });
  await peer.send({ jsonrpc: "2.0", method: "note", params: { n: 1 } });
  await peer.send({ jsonrpc: "2.0", id: 1, method: "echo", params: { a: 1 } });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 1, result: { a: 1 } });
  await peer.endInput();
  assert.equal(await channel.closed, undefined);
  assert.deepEqual(noted, [1]);
  await assert.rejects(channel.remote.work({}), { name: "ConnectionClosedError" });
  await peer.close();
});

Deno.test("jsonrpc close: an end with work in flight or held is no clean end, and settles at once", async () => {
  // Each would otherwise wait on a peer that may read no more: a handler calling it back, a
  // handler that never settles, a notification handler that never does with another held, and
  // answers too large for a peer that reads nothing. The work stops and closed rejects.
  const never = () => new Promise<never>(() => {});
  const cases = {
    "a call back to the peer": {
      handlers: {
        work: (_: object, ctx: CallContext<{ ask(p: object): string }>) =>
          ctx.channel.remote.ask({}),
      },
      send: [{ jsonrpc: "2.0", id: 1, method: "work", params: {} }, {
        jsonrpc: "2.0",
        id: 2,
        method: "work",
        params: {},
      }],
    },
    "a handler that never settles": {
      handlers: { work: never },
      send: [{ jsonrpc: "2.0", id: 1, method: "work", params: {} }, {
        jsonrpc: "2.0",
        id: 2,
        method: "work",
        params: {},
      }],
    },
    "a notification that never settles": {
      handlers: { note: never },
      send: [{ jsonrpc: "2.0", method: "note", params: {} }, {
        jsonrpc: "2.0",
        method: "note",
        params: {},
      }],
    },
    "answers a peer never reads": {
      handlers: { big: () => "x".repeat(200_000) },
      send: Array.from({ length: 8 }, (_, i) => ({
        jsonrpc: "2.0",
        id: i + 1,
        method: "big",
        params: {},
      })),
    },
  };
  for (const [name, { handlers, send }] of Object.entries(cases)) {
    const { channel, peer } = await setup({ role: "server", maxInFlight: 1, handlers });
    for (const message of send) await peer.send(message);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await peer.endInput();
    await assert.rejects(channel.closed, { name: "ConnectionClosedError" }, name);
    await channel.close();
    await peer.close();
  }
});

Deno.test("jsonrpc close: input ending inside a message rejects closed, with no call pending", async () => {
  for (const framing of ["ndjson", "content-length"] as const) {
    const { channel, peer } = await setup({ framing });
    await peer.raw(framing === "ndjson" ? `{"jsonrpc":"2.0"` : `Content-Length: 60\r\n\r\n{}`);
    await peer.close();
    await assert.rejects(channel.closed, (error: Error) => {
      assert.equal(error.name, "ConnectionClosedError", framing);
      assert.match(error.message, /^Protocol error: Stream ended mid-frame/);
      assert.equal((error.cause as Error).cause?.constructor, TruncatedFrameError);
      return true;
    });
  }
});

Deno.test("jsonrpc close: a server over stdio that awaits closed exits 0 when its client goes", async () => {
  const server = `
    const { openJsonRpc } = await import(${JSON.stringify(import.meta.resolve("./mod.ts"))});
    const { stdioTransport } = await import(
      ${JSON.stringify(import.meta.resolve("../transports/stdio.ts"))}
    );
    const server = await openJsonRpc(stdioTransport(), {
      framing: "ndjson",
      handlers: { ping: () => "pong" },
    });
    await server.closed;
  `;
  const child = spawnTransport(Deno.execPath(), { args: ["eval", server] });
  const client = await openJsonRpc<{ ping(): string }>(child, { framing: "ndjson" });
  assert.equal(await client.remote.ping(), "pong");
  await client.close();
  assert.equal((await child.status).code, 0);
});

Deno.test("jsonrpc close: conduit's own wire still fails a peer that ends without GOODBYE", async () => {
  const [a, b] = memoryPair();
  const peer = new ConduitPeer(b);
  const opening = openChannel(a, { codec: jsonCodec() });
  await peer.handshake();
  const channel = await opening;
  await peer.close();
  await assert.rejects(channel.closed, {
    name: "ConnectionClosedError",
    message: "The peer closed the connection without a GOODBYE",
  });
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
