import assert from "node:assert/strict";
import { TransportClosedError } from "../errors.ts";
import { concat } from "../framing/_test_util.ts";
import { ReadBuffer, readBufferBytes } from "./_byte_channel_transport.ts";
import { readMixed } from "./_conformance.ts";
import { connTransport } from "./_conn_transport.ts";
import { memoryPair } from "./memory.ts";
import { tcp, type TestPair, tls, unix } from "./_test_pairs.ts";
import type { Transport } from "./types.ts";

type ReadInto = (view: Uint8Array) => Promise<Uint8Array | null>;

interface Pair {
  a: Transport;
  /** The reading end, with its `readInto`. */
  b: Transport & { readInto: ReadInto };
  cleanup: () => Promise<void>;
}

const PAIRS: Record<string, () => Promise<Pair>> = {
  unix: () => unix.pair().then(withReadInto),
  tcp: () => tcp.pair().then(withReadInto),
  tls: () => tls.pair().then(withReadInto),
};

function withReadInto({ a, b, cleanup }: TestPair): Pair {
  const readInto = (b as { readInto?: ReadInto }).readInto;
  assert.equal(typeof readInto, "function", "a socket transport has readInto");
  return { a, b: Object.assign(b, { readInto: readInto! }), cleanup };
}

for (const [name, makePair] of Object.entries(PAIRS)) {
  const test = (title: string, fn: (pair: Pair) => Promise<void>) =>
    Deno.test(`${name}: ${title}`, async () => {
      const pair = await makePair();
      try {
        await fn(pair);
      } finally {
        await pair.cleanup();
      }
    });

  test("readInto() reads into the given buffer itself, mixed with readable reads", async ({ a, b }) => {
    const sent = new Uint8Array(3 << 20);
    for (let i = 0; i < sent.length; i++) sent[i] = (i * 7) % 253;
    const writer = a.writable.getWriter();
    const writing = (async () => {
      for (let i = 0; i < sent.length; i += 50_000) {
        await writer.write(sent.subarray(i, i + 50_000));
      }
      await writer.close();
    })();
    // Beyond the conformance case (TypeError and abort() are there too): a socket reads in
    // place, never transferring the view's buffer.
    const received = await readMixed(b, async (view) => {
      const read = await b.readInto(view);
      if (read !== null) {
        assert.equal(read.buffer, view.buffer, "the bytes land in the given buffer");
      }
      return read;
    });
    await writing;
    assert.deepEqual(received, sent);
  });

  test("readInto(): TypeError for a read() made while the last read's pull is settling", async ({ a, b }) => {
    const writer = a.writable.getWriter();
    await writer.write(new Uint8Array([1]));
    const reader = b.readable.getReader();
    assert.deepEqual((await reader.read()).value, new Uint8Array([1]));
    // The stream may still count the pull that served the read above as running: this read
    // then waits for it to settle before reaching the source, a few microtasks later.
    const pending = reader.read();
    const refused = assert.rejects(b.readInto(new Uint8Array(8)), TypeError);
    await writer.write(new Uint8Array([2, 3]));
    await refused;
    assert.deepEqual((await pending).value, new Uint8Array([2, 3]));
    writer.releaseLock();
    reader.releaseLock();
  });

  test("readInto(): TypeError while a chunk read for a released reader waits in readable", async ({ a, b }) => {
    await started(b.readable);
    const first = b.readable.getReader();
    const abandoned = first.read();
    first.releaseLock();
    await assert.rejects(abandoned, TypeError);
    const writer = a.writable.getWriter();
    await writer.write(new Uint8Array([1, 2]));
    // The read started for the released reader lands in the readable's queue, ahead of
    // anything readInto() could read. (Refused either way: while still in flight, as a read.)
    await new Promise((resolve) => setTimeout(resolve, 50));
    const reader = b.readable.getReader();
    const refused = assert.rejects(b.readInto(new Uint8Array(8)), TypeError);
    await writer.write(new Uint8Array([3]));
    await refused;
    assert.deepEqual((await reader.read()).value, new Uint8Array([1, 2]));
    assert.deepEqual((await b.readInto(new Uint8Array(8)))?.[0], 3);
    writer.releaseLock();
    reader.releaseLock();
  });

  test("a read() made while readInto() is pending is served once it has read", async ({ a, b }) => {
    await started(b.readable);
    const reader = b.readable.getReader();
    const into = b.readInto(new Uint8Array(8));
    const next = reader.read();
    const writer = a.writable.getWriter();
    await writer.write(new Uint8Array([1]));
    assert.deepEqual(await into, new Uint8Array([1]));
    await writer.write(new Uint8Array([2]));
    assert.deepEqual((await next).value, new Uint8Array([2]));
    writer.releaseLock();
    reader.releaseLock();
  });

  test("readChunk(), writeChunk() and closeWrite() carry every byte without the streams", async ({ a, b }) => {
    const sent = new Uint8Array(1 << 20);
    for (let i = 0; i < sent.length; i++) sent[i] = (i * 13) % 251;
    const writing = (async () => {
      for (let i = 0; i < sent.length; i += 40_000) {
        await a.writeChunk!(sent.subarray(i, i + 40_000));
      }
      await a.closeWrite!();
    })();
    const chunks: Uint8Array[] = [];
    for (let chunk = await b.readChunk!(); chunk !== null; chunk = await b.readChunk!()) {
      chunks.push(chunk);
    }
    await writing;
    assert.deepEqual(concat(chunks), sent);
    assert.equal(await b.readChunk!(), null, "readChunk() after the end");
    // Half-closed: the other direction still carries bytes.
    await b.writeChunk!(new Uint8Array([4, 2]));
    assert.deepEqual(await a.readChunk!(), new Uint8Array([4, 2]));
  });

  test("readChunk() mixes with readInto(); a second read while one is pending is a TypeError", async ({ a, b }) => {
    const pending = b.readChunk!();
    await assert.rejects(b.readInto(new Uint8Array(8)), TypeError);
    await assert.rejects(b.readChunk!(), TypeError);
    await a.writeChunk!(new Uint8Array([1, 2, 3]));
    assert.deepEqual(await pending, new Uint8Array([1, 2, 3]));
    await a.writeChunk!(new Uint8Array([4]));
    assert.deepEqual(await b.readInto(new Uint8Array(8)), new Uint8Array([4]));
  });

  test("close() flushes a writeChunk() in flight; writeChunk() after it is a TransportClosedError", async ({ a, b }) => {
    const sent = new Uint8Array(4 << 20).fill(7);
    const writing = a.writeChunk!(sent);
    const closing = a.close();
    const chunks: Uint8Array[] = [];
    for (let chunk = await b.readChunk!(); chunk !== null; chunk = await b.readChunk!()) {
      chunks.push(chunk);
    }
    await Promise.all([writing, closing]);
    assert.equal(concat(chunks).length, sent.length);
    const late = await Promise.resolve(a.writeChunk!(new Uint8Array(1))).catch((e) => e);
    assert.ok(late instanceof TransportClosedError, `got ${late}`);
  });

  test("a readable first used after direct reads ended is closed, or errored after abort()", async ({ a, b }) => {
    await a.closeWrite!();
    assert.equal(await b.readChunk!(), null);
    assert.equal((await b.readable.getReader().read()).done, true);
    const reason = new Error("test abort");
    await a.abort(reason);
    const error = await a.readable.getReader().read().catch((e) => e);
    assert.ok(error instanceof TransportClosedError, `got ${error}`);
    assert.equal(error.cause, reason);
  });

  test("a pending readInto() settles with null when the transport closes", async ({ b }) => {
    const reading = b.readInto(new Uint8Array(8));
    await b.close();
    assert.equal(await reading, null);
    assert.equal(await b.readInto(new Uint8Array(8)), null);
  });
}

Deno.test("unix: readInto(): TypeError for a read() made before the readable started", async () => {
  const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
  const listener = Deno.listen({ transport: "unix", path: `${dir}/s` });
  const accepted = listener.accept();
  const conn = await Deno.connect({ transport: "unix", path: `${dir}/s` });
  const peer = await accepted;
  // Wrapped and read in one turn: the stream has not started, so the read has not reached
  // the source's pull yet.
  const t = connTransport(conn, "test socket");
  const reader = t.readable.getReader();
  const pending = reader.read();
  const refused = assert.rejects(t.readInto!(new Uint8Array(8)), TypeError);
  await peer.write(new Uint8Array([1]));
  await refused;
  assert.deepEqual((await pending).value, new Uint8Array([1]));
  reader.releaseLock();
  peer.close();
  await t.close();
  listener.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("memory: a transport over a channel that cannot read into a buffer has no readInto", async () => {
  const [a, b] = memoryPair();
  assert.equal((a as { readInto?: ReadInto }).readInto, undefined);
  await Promise.all([a.close(), b.close()]);
});

Deno.test("ReadBuffer: a read filling half the buffer or more is handed out, a smaller one copied", () => {
  const K = 1024;
  const buffer = new ReadBuffer(8 * K);
  const first = buffer.buffer;
  assert.equal(first.length, 2 * K);
  // A full read: handed out as is, and the next buffer is twice as large.
  const full = buffer.take(first.subarray(0, first.length));
  assert.equal(full.buffer, first.buffer);
  assert.equal(buffer.buffer.length, 4 * K);
  // A small read: copied out at its size, and the buffer is kept.
  const second = buffer.buffer;
  second.fill(9, 0, 100);
  const small = buffer.take(second.subarray(0, 100));
  assert.notEqual(small.buffer, second.buffer);
  assert.equal(small.buffer.byteLength, 100);
  assert.equal(buffer.buffer, second);
  // Half of it: handed out, and the buffer does not grow.
  const half = buffer.take(second.subarray(0, 2 * K));
  assert.equal(half.buffer, second.buffer);
  assert.equal(buffer.buffer.length, 4 * K);
  assert.notEqual(buffer.buffer, second);
  // Growth stops at the maximum.
  buffer.take(buffer.buffer.subarray(0, 4 * K));
  buffer.take(buffer.buffer.subarray(0, 8 * K));
  assert.equal(buffer.buffer.length, 8 * K);
  assert.deepEqual(small, new Uint8Array(100).fill(9));
});

Deno.test("ReadBuffer: allocates at the first read, and free() gives back what it holds alone", () => {
  const buffer = new ReadBuffer(256 * 1024, true);
  const before = readBufferBytes();
  buffer.free(); // never read: nothing to free
  assert.deepEqual(readBufferBytes(), before);
  const first = buffer.buffer;
  assert.equal(readBufferBytes().allocated - before.allocated, first.length);
  const small = buffer.take(first.subarray(0, 10));
  buffer.free();
  assert.equal(first.buffer.byteLength, 0); // detached: its memory is freed
  assert.equal(small.length, 10); // a copy, untouched
  assert.equal(readBufferBytes().held, before.held);
  // Grown to 256 KiB, then a large read handed out as a view of it: that buffer is not freed.
  for (let size = 2 * 1024; size < 256 * 1024; size *= 2) {
    buffer.take(buffer.buffer.subarray(0, size));
  }
  const shared = buffer.take(buffer.buffer.subarray(0, 64 * 1024).fill(3));
  buffer.free();
  assert.deepEqual(shared, new Uint8Array(64 * 1024).fill(3));
  assert.equal(readBufferBytes().held, before.held);
});

Deno.test("ReadBuffer: over in-place reads, large reads share one buffer and stay intact", () => {
  const buffer = new ReadBuffer(256 * 1024, true);
  // Grow to 256 KiB with full reads.
  for (const size of [2, 4, 8, 16, 32, 64, 128]) {
    const full = buffer.buffer.subarray(0, size * 1024);
    assert.equal(buffer.take(full), full);
  }
  const store = buffer.buffer;
  assert.equal(store.length, 256 * 1024);
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < 3; i++) {
    const window = buffer.buffer;
    window.fill(i + 1, 0, 64 * 1024);
    const chunk = buffer.take(window.subarray(0, 64 * 1024));
    // Handed out as it is, a view of the same buffer, not a copy.
    assert.equal(chunk.buffer, store.buffer);
    chunks.push(chunk);
  }
  // 64 KiB left: the next large read is handed out and a new buffer comes.
  const last = buffer.take(buffer.buffer.subarray(0, 64 * 1024));
  assert.equal(last.buffer, store.buffer);
  assert.notEqual(buffer.buffer.buffer, store.buffer);
  assert.equal(buffer.buffer.length, 256 * 1024);
  // No chunk was overwritten by the reads after it.
  chunks.forEach((chunk, i) => assert.deepEqual(chunk, new Uint8Array(64 * 1024).fill(i + 1)));
  // A small read is still copied out, and the buffer kept.
  const before = buffer.buffer;
  const small = buffer.take(before.subarray(0, 100));
  assert.notEqual(small.buffer, before.buffer);
  assert.equal(buffer.buffer, before);
});

Deno.test("ReadBuffer: without in-place reads, a large read is copied or takes the buffer", () => {
  const buffer = new ReadBuffer(256 * 1024);
  for (const size of [2, 4, 8, 16, 32, 64, 128]) {
    buffer.take(buffer.buffer.subarray(0, size * 1024));
  }
  const store = buffer.buffer;
  const chunk = buffer.take(store.subarray(0, 64 * 1024));
  assert.notEqual(chunk.buffer, store.buffer); // copied: a BYOB read would detach a view
  assert.equal(buffer.buffer, store);
});

/**
 * Lets `readable`, created at its first use, start: a read() requested before it started
 * reaches the source only after a microtask, so the cases above, about a started stream,
 * begin once it has.
 */
async function started(readable: ReadableStream<Uint8Array>): Promise<void> {
  assert.equal(readable.locked, false);
  await Promise.resolve();
}
