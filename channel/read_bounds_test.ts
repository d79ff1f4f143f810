// Hostile peers against a conduit server in its own process, measured by the server's RSS
// (generous bounds, never timings): a peer that never reads its answers, and frames too big
// for the handshake. Over a real Unix socket.

import assert from "node:assert/strict";
import { encodeFrame, FrameDecoder } from "../framing/frame_decoder.ts";
import { decodeEnvelope, encodeEnvelope, type Envelope } from "../protocol/envelope.ts";
import { helloBody } from "./_test_raw_peer.ts";

const MiB = 1024 * 1024;
const SERVER = new URL("./_testdata/hostile_server.ts", import.meta.url).pathname;

/** The server's memory after a full GC, in bytes: RSS, and the live JavaScript heap + external. */
interface ServerMemory {
  rss: number;
  live: number;
}

/** The server subprocess: `memory()` asks for its memory after a full GC, `rss()` for the RSS. */
async function startServer(args: string[] = []): Promise<
  { path: string; memory(): Promise<ServerMemory>; rss(): Promise<number> } & AsyncDisposable
> {
  const dir = await Deno.makeTempDir({ prefix: "cdt" });
  const path = `${dir}/s.sock`;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--expose-gc", SERVER, path, ...args],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const line = async (): Promise<string> => {
    while (!buffered.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error("the server exited");
      buffered += value;
    }
    const end = buffered.indexOf("\n");
    const text = buffered.slice(0, end);
    buffered = buffered.slice(end + 1);
    return text;
  };
  assert.equal(await line(), "listening");
  const stdin = child.stdin.getWriter();
  const memory = async (): Promise<ServerMemory> => {
    await stdin.write(new TextEncoder().encode("memory\n"));
    return JSON.parse(await line());
  };
  return {
    path,
    memory,
    async rss() {
      return (await memory()).rss;
    },
    async [Symbol.asyncDispose]() {
      await stdin.close();
      await lines.cancel();
      await child.status;
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** A raw client: sends bytes, reads frames only when asked. */
class RawClient {
  readonly conn: Deno.UnixConn;
  readonly #decoder = new FrameDecoder();
  readonly #buffer = new Uint8Array(64 * 1024);

  constructor(conn: Deno.UnixConn) {
    this.conn = conn;
  }

  static async connect(path: string): Promise<RawClient> {
    return new RawClient(await Deno.connect({ transport: "unix", path }));
  }

  async write(bytes: Uint8Array): Promise<void> {
    for (let sent = 0; sent < bytes.length;) sent += await this.conn.write(bytes.subarray(sent));
  }

  /** The next frame's envelope, or undefined at the end. */
  async next(): Promise<Envelope | undefined> {
    for (;;) {
      const frame = this.#decoder.next();
      if (frame !== undefined) return decodeEnvelope(frame.slice());
      const n = await this.conn.read(this.#buffer);
      if (n === null) return undefined;
      this.#decoder.push(this.#buffer.slice(0, n));
    }
  }

  async handshake(): Promise<void> {
    await this.write(encodeFrame(encodeEnvelope({ kind: "hello", body: helloBody() })));
    assert.equal((await this.next())?.kind, "hello");
  }
}

function callOf(id: number, body: Uint8Array, method = "echo"): Envelope {
  return { kind: "call", id, flags: 0, timeoutMs: 0, method, body };
}

/** Waits until `progress()` stops changing for a while (the writer is blocked) or `done`. */
async function settle(progress: () => number, done: () => boolean): Promise<void> {
  let last = -1;
  let still = 0;
  while (!done() && still < 5) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = progress();
    still = now === last ? still + 1 : 0;
    last = now;
  }
}

// Answers the server makes up itself (no such method, a param it cannot decode) count against
// maxInFlight as a handler's do.
const NEVER_READ = [
  { calls: "calls", method: "echo", param: JSON.stringify("x".repeat(4 * 1024)), answer: "result" },
  {
    calls: "calls of no such method",
    method: "nope".padEnd(1000, "x"),
    param: "0",
    answer: "error",
  },
  { calls: "calls of a bad param", method: "echo", param: "{".repeat(4 * 1024), answer: "error" },
];

for (const { calls, method, param: text, answer } of NEVER_READ) {
  Deno.test(`read bounds: a peer that sends 10,000 ${calls} and never reads an answer`, async () => {
    await using server = await startServer();
    const param = new TextEncoder().encode(text);
    {
      // A well-behaved client first, so the figure leaves out the code the server compiles.
      const warm = await RawClient.connect(server.path);
      await warm.handshake();
      for (let id = 1; id <= 2000; id++) {
        await warm.write(encodeFrame(encodeEnvelope(callOf(id, param, method))));
        assert.equal((await warm.next())?.kind, answer);
      }
      warm.conn.close();
    }
    const before = await server.rss();
    const client = await RawClient.connect(server.path);
    await client.handshake();
    const CALLS = 10_000;
    let sent = 0;
    let finished = false;
    const sending = (async () => {
      for (let id = 1; id <= CALLS; id += 10) {
        const frames = [];
        for (let i = id; i < id + 10; i++) {
          frames.push(encodeFrame(encodeEnvelope(callOf(i, param, method))));
        }
        const batch = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
        frames.reduce((at, f) => (batch.set(f, at), at + f.length), 0);
        await client.write(batch);
        sent += 10;
      }
      finished = true;
    })();
    // The server stops reading once it holds answers it cannot write: the sends block.
    await settle(() => sent, () => finished);
    const grown = (await server.rss()) - before;
    console.log(`server grew by ${(grown / MiB).toFixed(1)} MiB; ${sent} of ${CALLS} calls sent`);
    assert.ok(!finished, "the server read every call while none of its answers was read");
    assert.ok(grown <= 32 * MiB, `the server grew by ${(grown / MiB).toFixed(1)} MiB`);
    // Reading the answers now lets every call through: nothing was dropped.
    let answers = 0;
    while (answers < CALLS) {
      const frame = await client.next();
      assert.ok(frame !== undefined, `the server closed after ${answers} answers`);
      assert.equal(frame.kind, answer);
      answers++;
    }
    await sending;
    client.conn.close();
  });
}

Deno.test("read bounds: four connections announcing 64 MiB frames before any HELLO", async () => {
  await using server = await startServer();
  const before = await server.rss();
  const body = new Uint8Array(1024 * 1024).fill(0x61);
  const flood = async (): Promise<number> => {
    const client = await RawClient.connect(server.path);
    let sent = 0;
    try {
      // A frame of 64 MiB announced, then 16 MiB of it, unless the server refuses it first.
      await client.write(new Uint8Array([0x04, 0, 0, 0]));
      for (; sent < 16; sent++) await client.write(body);
    } catch {
      // The server closed the connection: what this test hopes for.
    }
    client.conn.close();
    return sent;
  };
  const sent = await Promise.all([flood(), flood(), flood(), flood()]);
  const grown = (await server.rss()) - before;
  console.log(`server grew by ${(grown / MiB).toFixed(1)} MiB; MiB sent: ${sent.join(", ")}`);
  assert.ok(grown <= 32 * MiB, `the server grew by ${(grown / MiB).toFixed(1)} MiB`);
});

Deno.test("read bounds: a peer that floods PINGs and never reads a PONG", async () => {
  await using server = await startServer();
  const client = await RawClient.connect(server.path);
  await client.handshake();
  // PINGs in 1 MiB writes (174,762 per write), 4 million (24 MiB) at a time.
  const ping = encodeFrame(encodeEnvelope({ kind: "ping", nonce: 100 }));
  const batch = new Uint8Array(Math.floor(MiB / ping.length) * ping.length);
  for (let at = 0; at < batch.length; at += ping.length) batch.set(ping, at);
  let sent = 0;
  let finished = false;
  const sending = (async () => {
    for (; sent < 12_000_000; sent += batch.length / ping.length) await client.write(batch);
    finished = true;
  })();
  const sentBy = async (count: number) => {
    while (sent < count && !finished) await new Promise((resolve) => setTimeout(resolve, 20));
  };
  const start = await server.memory();
  await sentBy(4_000_000);
  const early = await server.memory();
  await settle(() => sent, () => finished);
  const end = await server.memory();
  const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;
  console.log(
    `${sent} PINGs sent; server RSS ${mib(start.rss)} -> ${mib(early.rss)} after 4M -> ` +
      `${mib(end.rss)}; live heap ${mib(start.live)} -> ${mib(end.live)}`,
  );
  // Nothing piles up: PONGs queued without bound held about 200 MiB of live memory.
  assert.ok(
    end.live - start.live <= 16 * MiB,
    `the live heap grew by ${mib(end.live - start.live)}`,
  );
  // The RSS levels off: reading tiny frames at full speed grows V8's young generation and
  // the allocator's pools in the first millions (30-60 MiB here), which stay, and then stop.
  assert.ok(
    end.rss - early.rss <= 16 * MiB,
    `the server grew by ${mib(end.rss - early.rss)} after 4M PINGs`,
  );
  assert.ok(end.rss - start.rss <= 96 * MiB, `the server grew by ${mib(end.rss - start.rss)}`);
  client.conn.close();
  await sending.catch(() => {});
});

Deno.test("read bounds: NOTIFYs of 50,000 names to a handler object that serves any name", async () => {
  await using server = await startServer(["--any"]);
  const client = await RawClient.connect(server.path);
  await client.handshake();
  const before = (await server.memory()).live;
  const empty = new Uint8Array(0);
  for (let from = 0; from < 50_000; from += 1000) {
    const frames = [];
    for (let i = from; i < from + 1000; i++) {
      frames.push(
        encodeEnvelope({ kind: "notify", method: `m${i}`.padEnd(1000, "x"), body: empty }),
      );
    }
    for (const frame of frames) await client.write(encodeFrame(frame));
  }
  // A call after them: answered once every NOTIFY before it was dispatched.
  await client.write(encodeFrame(encodeEnvelope(callOf(1, new TextEncoder().encode("1")))));
  assert.equal((await client.next())?.kind, "result");
  const grown = (await server.memory()).live - before;
  console.log(`the server's live memory grew by ${(grown / MiB).toFixed(1)} MiB`);
  // Kept per name, the 50,000 names would hold over 50 MiB.
  assert.ok(grown <= 16 * MiB, `the server holds ${(grown / MiB).toFixed(1)} MiB more`);
  client.conn.close();
});

Deno.test("read bounds: JSON-RPC requests and notifications of 1,100 long names to a catch-all", async () => {
  // conduit's protocol caps a method name at 1,024 bytes; JSON-RPC's only at the frame size.
  await using server = await startServer(["--any", "--jsonrpc"]);
  const conn = await Deno.connect({ transport: "unix", path: server.path });
  const before = (await server.memory()).live;
  const lines = conn.readable.pipeThrough(new TextDecoderStream()).getReader();
  let received = "";
  let id = 0;
  for (let from = 0; from < 1100; from += 100) {
    let batch = "";
    for (let i = from; i < from + 100; i++) {
      const method = `m${i}`.padEnd(32 * 1024, "x");
      batch += `${JSON.stringify({ jsonrpc: "2.0", method, params: [1] })}\n`;
      batch += `${JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params: [1] })}\n`;
    }
    const bytes = new TextEncoder().encode(batch);
    for (let sent = 0; sent < bytes.length;) sent += await conn.write(bytes.subarray(sent));
    // Every request answered (a result each) before the next hundred.
    while (received.split("\n").length - 1 < id) {
      const { value, done } = await lines.read();
      if (done) throw new Error("the server closed the connection");
      received += value;
    }
    assert.ok(!received.includes('"error"'), received.slice(0, 300));
  }
  const grown = (await server.memory()).live - before;
  console.log(`the server's live memory grew by ${(grown / MiB).toFixed(1)} MiB`);
  // Cached per name, up to 1,024 names of 32 KiB for requests and as many for notifications.
  assert.ok(grown <= 16 * MiB, `the server holds ${(grown / MiB).toFixed(1)} MiB more`);
  await lines.cancel(); // closes the connection
});
