import assert from "node:assert/strict";
import { rawCodec } from "../codecs/raw.ts";
import { TransportClosedError } from "../errors.ts";
import { encodeFrame } from "../framing/frame_decoder.ts";
import { memoryPair } from "../transports/memory.ts";
import { listenUnix } from "../transports/unix.ts";
import { unix } from "../transports/_test_pairs.ts";
import { helloBody } from "./_test_raw_peer.ts";
import { Channel, openChannel } from "./channel.ts";
import { encodeEnvelope } from "../protocol/envelope.ts";
import { ConnectionClosedError } from "./errors.ts";

interface Sink {
  chunk(bytes: Uint8Array): void;
}

/** A sink with a method whose calls the test's peer never answers. */
interface SilentSink extends Sink {
  wait(bytes: Uint8Array): Uint8Array;
}

const CHUNK_BYTES = 64 * 1024;
/** A NOTIFY frame's header and envelope head on top of its body, generously. */
const FRAME_OVERHEAD = 64;

Deno.test("notify/ready: 200 MB of notifications stay within one frame of the mark, in order", async () => {
  const pair = await unix.pair();
  let received = 0;
  let outOfOrder = 0;
  const [server, client] = await Promise.all([
    openChannel(pair.a, {
      codec: rawCodec(),
      handlers: {
        chunk(bytes: Uint8Array) {
          const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
          if (bytes.length !== CHUNK_BYTES || view.getUint32(0) !== received) outOfOrder++;
          received++;
        },
      } satisfies Sink,
    }),
    openChannel<Sink>(pair.b, { codec: rawCodec() }),
  ]);
  const count = Math.ceil(200e6 / CHUNK_BYTES);
  const chunk = new Uint8Array(CHUNK_BYTES);
  const view = new DataView(chunk.buffer);
  let waits = 0;
  let lowest = Infinity;
  for (let i = 0; i < count; i++) {
    if (client.desiredSize <= 0) {
      waits++;
      await client.ready;
      assert.ok(client.desiredSize > 0, `desiredSize ${client.desiredSize} after ready`);
    }
    view.setUint32(0, i);
    client.notify("chunk", chunk);
    lowest = Math.min(lowest, client.desiredSize);
  }
  // The queue went past the mark (so the loop did wait), but never by more than one frame.
  assert.ok(waits > 0);
  assert.ok(lowest <= 0);
  assert.ok(lowest > -(CHUNK_BYTES + FRAME_OVERHEAD), `lowest desiredSize ${lowest}`);
  await Promise.all([client.close(), server.closed]);
  assert.equal(received, count);
  assert.equal(outOfOrder, 0);
  await pair.cleanup();
});

Deno.test("notify/ready: rejects like notify once closing or closed, also while waiting", async () => {
  const pair = await unix.pair();
  const [server, client] = await Promise.all([
    openChannel(pair.a, { codec: rawCodec(), handlers: { chunk() {} } satisfies Sink }),
    openChannel<Sink>(pair.b, { codec: rawCodec() }),
  ]);
  await client.ready;
  assert.ok(client.desiredSize > 0);
  // Past the mark in one turn: this wait is pending when close() starts.
  const chunk = new Uint8Array(CHUNK_BYTES);
  while (client.desiredSize > 0) client.notify("chunk", chunk);
  const waiting = client.ready;
  const closing = client.close();
  assert.equal(client.desiredSize, 0);
  await assert.rejects(waiting, ConnectionClosedError);
  await assert.rejects(client.ready, ConnectionClosedError);
  assert.throws(() => client.notify("chunk", chunk), ConnectionClosedError);
  await Promise.all([closing, server.closed]);
  await assert.rejects(client.ready, /The channel is closed/);
  assert.equal(client.desiredSize, 0);
  await pair.cleanup();
});

Deno.test("notify/ready: a pending wait rejects when the peer dies", async () => {
  const pair = await unix.pair();
  const opening = openChannel<Sink>(pair.b, { codec: rawCodec() });
  // The peer answers the handshake, then never reads again: the kernel buffers fill up.
  const writer = pair.a.writable.getWriter();
  await writer.write(
    encodeFrame(encodeEnvelope({ kind: "hello", body: helloBody({ codec: "raw" }) })),
  );
  const reader = pair.a.readable.getReader();
  await reader.read();
  reader.releaseLock();
  writer.releaseLock();
  const client = await opening;
  const chunk = new Uint8Array(CHUNK_BYTES);
  // Far more than a socket buffers, so the queue cannot drain below the mark.
  for (let i = 0; i < 512; i++) client.notify("chunk", chunk);
  let settled = false;
  const waiting = client.ready.finally(() => settled = true);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(settled, false);
  await pair.a.abort(new Error("peer died"));
  await assert.rejects(waiting, ConnectionClosedError);
  await assert.rejects(client.closed, ConnectionClosedError);
  assert.equal(client.desiredSize, 0);
  await pair.cleanup();
});

Deno.test("notify/ready: waits for the handshake, and rejects if it fails", async () => {
  const pair = await unix.pair();
  const client = new Channel<Sink>(pair.b, { codec: rawCodec() });
  assert.equal(client.desiredSize, 0);
  let settled = false;
  const waiting = client.ready.finally(() => settled = true);
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(settled, false);
  const server = await openChannel(pair.a, { codec: rawCodec() });
  await waiting;
  assert.ok(client.desiredSize > 0);
  await Promise.all([client.close(), server.close()]);
  await pair.cleanup();

  const other = await unix.pair();
  const mismatched = new Channel(other.b, { codec: rawCodec() });
  const failing = mismatched.ready;
  await Promise.allSettled([
    mismatched.opened,
    openChannel(other.a, { codec: { ...rawCodec(), name: "other" } }),
  ]);
  await assert.rejects(failing, ConnectionClosedError);
  await mismatched.closed.catch(() => {});
  await other.cleanup();
});

Deno.test("notify/ready: a smaller writeHighWaterMark is honoured over a Unix socket", async () => {
  const mark = 16 * 1024;
  const chunk = new Uint8Array(4 * 1024);
  const pair = await unix.pair();
  let received = 0;
  const [server, client] = await Promise.all([
    openChannel(pair.a, {
      codec: rawCodec(),
      handlers: { chunk: (bytes: Uint8Array) => void (received += bytes.length) } satisfies Sink,
    }),
    openChannel<Sink>(pair.b, { codec: rawCodec(), writeHighWaterMark: mark }),
  ]);
  const count = 2000;
  let waits = 0;
  let lowest = Infinity;
  let highest = -Infinity;
  for (let i = 0; i < count; i++) {
    if (client.desiredSize <= 0) {
      waits++;
      await client.ready;
    }
    highest = Math.max(highest, client.desiredSize);
    client.notify("chunk", chunk);
    lowest = Math.min(lowest, client.desiredSize);
  }
  // Measured against the smaller mark (the default would leave ~1 MiB of room), and never
  // more than one frame past it.
  assert.ok(waits > 0);
  assert.ok(highest <= mark, `highest desiredSize ${highest}`);
  assert.ok(lowest > -(chunk.length + FRAME_OVERHEAD), `lowest desiredSize ${lowest}`);
  await Promise.all([client.close(), server.closed]);
  assert.equal(received, count * chunk.length);
  await pair.cleanup();
});

Deno.test("notify/ready: writeHighWaterMark 0 waits until the queue is written", async () => {
  const pair = await unix.pair();
  const [server, client] = await Promise.all([
    openChannel(pair.a, { codec: rawCodec(), handlers: { chunk() {} } satisfies Sink }),
    openChannel<Sink>(pair.b, { codec: rawCodec(), writeHighWaterMark: 0 }),
  ]);
  await client.ready;
  assert.equal(client.desiredSize, 0);
  client.notify("chunk", new Uint8Array(100));
  assert.ok(client.desiredSize < -100);
  await client.ready;
  assert.equal(client.desiredSize, 0);
  await Promise.all([client.close(), server.closed]);
  await pair.cleanup();
});

Deno.test("notify/ready: writeHighWaterMark out of range is a RangeError naming it", async () => {
  const [a, b] = memoryPair();
  for (const value of [-1, 1.5, NaN]) {
    assert.throws(
      () => new Channel(a, { codec: rawCodec(), writeHighWaterMark: value }),
      (error: unknown) =>
        error instanceof RangeError &&
        error.message ===
          `writeHighWaterMark must be an integer from 0 to ${Number.MAX_SAFE_INTEGER}, got ${value}`,
    );
  }
  await Promise.all([a.close(), b.close()]);
});

Deno.test("a failed write closes the channel at once: pending calls settle, notify throws with the failure as cause", async () => {
  const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
  const listener = await listenUnix(`${dir}/s`);
  const hello = encodeFrame(encodeEnvelope({ kind: "hello", body: helloBody({ codec: "raw" }) }));
  // A real peer that answers the handshake, then shuts down its receiving side and keeps the
  // connection open: writes to it fail (EPIPE), while the channel's reads see no end.
  const peer = new Deno.Command("python3", {
    args: ["-c", SHUT_RD_PEER, `${dir}/s`, bytesToHex(hello)],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const client = await openChannel<SilentSink>(await listener.accept(), {
    codec: rawCodec(),
    writeHighWaterMark: 1024,
  });
  const lines = peer.stdout.pipeThrough(new TextDecoderStream()).getReader();
  assert.equal(await readLine(lines), "shut\n");
  // A call the peer will never answer, with no deadline: only the failure can settle it.
  const pending = client.remote.wait(new Uint8Array(8), { timeout: Infinity });
  // Past the mark, so ready() waits for the write, which fails (EPIPE): that alone closes the
  // channel, before any later write or the end of reads.
  client.notify("chunk", new Uint8Array(2048));
  await assert.rejects(client.ready, ConnectionClosedError);
  assert.equal(client.desiredSize, 0);
  const failedWrite = (error: unknown) =>
    error instanceof ConnectionClosedError &&
    /Writing to the transport failed/.test(error.message) &&
    error.cause instanceof TransportClosedError;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const settled = await Promise.race([
    pending.then(() => "resolved", (error) => failedWrite(error) ? "failed" : String(error)),
    new Promise((resolve) => timer = setTimeout(resolve, 10_000, "still pending after 10 s")),
  ]);
  clearTimeout(timer);
  assert.equal(settled, "failed");
  await assert.rejects(client.closed, failedWrite);
  assert.throws(
    () => client.notify("chunk", new Uint8Array(8)),
    (error: unknown) =>
      error instanceof ConnectionClosedError && error.message === "The channel is closed" &&
      failedWrite(error.cause),
  );
  await peer.stdin.close();
  await lines.cancel();
  assert.equal((await peer.status).code, 0);
  await listener.close();
  await Deno.remove(dir, { recursive: true });
});

/** Connects to argv[1], sends the bytes of argv[2] (hex), reads, shuts down its reading. */
const SHUT_RD_PEER = `
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(bytes.fromhex(sys.argv[2]))
s.recv(4096)
s.shutdown(socket.SHUT_RD)
print("shut", flush=True)
sys.stdin.read()
s.close()
`;

/** Reads up to and including the first newline (a pipe may split a line across reads). */
async function readLine(reader: ReadableStreamDefaultReader<string>): Promise<string> {
  let line = "";
  while (!line.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    line += value;
  }
  return line;
}

function bytesToHex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

Deno.test("notification handlers that do not settle: at most maxInFlight run, the rest wait unread, none is lost", async () => {
  const pair = await unix.pair();
  const MAX = 32;
  const NOTES = 2_000;
  const started: number[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  const [server, client] = await Promise.all([
    openChannel(pair.a, {
      codec: rawCodec(),
      maxInFlight: MAX,
      handlers: {
        async chunk(bytes: Uint8Array) {
          started.push(new DataView(bytes.buffer, bytes.byteOffset).getUint32(0));
          await released;
        },
      } satisfies Sink,
    }),
    openChannel<Sink>(pair.b, { codec: rawCodec() }),
  ]);
  const note = new Uint8Array(1024);
  for (let i = 0; i < NOTES; i++) {
    new DataView(note.buffer).setUint32(0, i);
    client.notify("chunk", note);
  }
  // The server starts only MAX handlers and reads no more while they run (the rest of the 2 MB
  // waits in the socket and in the client's queue).
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(started.length, MAX);
  release();
  while (started.length < NOTES) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual(started, Array.from({ length: NOTES }, (_, i) => i));
  await Promise.all([client.close(), server.closed]);
});
