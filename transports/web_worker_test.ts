import assert from "node:assert/strict";
import { openChannel } from "../channel/mod.ts";
import { rawCodec } from "../codecs/raw.ts";
import type { ServiceApi } from "./_testdata/web_worker_service.ts";
import { testTransportConformance } from "./_conformance.ts";
import { assertDeathsFailPendingCalls } from "./_test_thread_failures.ts";
import { messagePortPair, webWorkerRelayPair } from "./_test_thread_pairs.ts";
import {
  DEFAULT_PARENT_SPIN_MICROS,
  messagePortTransport,
  selfTransport,
  transfer,
  workerTransport,
} from "./web_worker.ts";
import type { Transport } from "./types.ts";
import { concat } from "../framing/_test_util.ts";

const stuckUrl = new URL("./_testdata/web_worker_stuck.ts", import.meta.url);

function portPair(): [Transport, Transport] {
  const { a, b } = messagePortPair();
  return [a, b];
}

/** A worker that never reads, behind the parent's transport; kill() terminates it. */
function stuckPeer() {
  const worker = new Worker(stuckUrl, { type: "module" });
  return Promise.resolve({
    transport: workerTransport(worker),
    kill: () => Promise.resolve(worker.terminate()),
    cleanup: () => Promise.resolve(worker.terminate()),
  });
}

testTransportConformance({
  name: "message port",
  pair: () => Promise.resolve(messagePortPair()),
  stuckPeer,
  abortSeenByPeer: "error",
});

testTransportConformance({
  name: "web worker",
  // The parent's end of a real worker, which relays to a port whose other end is `b`.
  pair: () => Promise.resolve(webWorkerRelayPair()),
  stuckPeer,
  abortSeenByPeer: "error",
});

testTransportConformance({
  name: "web worker, spinMicros 150",
  // Every end waits awake after its posts: the same contract holds.
  pair: () => Promise.resolve(webWorkerRelayPair({ spinMicros: 150 })),
  stuckPeer,
  abortSeenByPeer: "error",
});

const serviceUrl = new URL("./_testdata/web_worker_service.ts", import.meta.url);

function pattern(size: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i += 4096) bytes[i] = (i >> 12) + seed;
  bytes[size - 1] = seed;
  return bytes;
}

/** Like assert.deepEqual for bytes, without its cost on megabytes. */
function assertSameBytes(actual: Uint8Array, expected: Uint8Array): void {
  assert.equal(actual.length, expected.length, "length");
  for (let i = 0; i < actual.length; i++) {
    if (actual[i] !== expected[i]) assert.fail(`byte ${i} is ${actual[i]}, not ${expected[i]}`);
  }
}

async function readAll(t: Transport, size: number): Promise<Uint8Array[]> {
  const reader = t.readable.getReader();
  const chunks: Uint8Array[] = [];
  for (let received = 0; received < size;) {
    const { value, done } = await reader.read();
    if (done) assert.fail(`ended after ${received} of ${size} bytes`);
    chunks.push(value);
    received += value.length;
  }
  reader.releaseLock();
  return chunks;
}

Deno.test("web worker: a chunk given up with transfer() moves without a copy; others are copied", async () => {
  const size = 64 << 20;
  for (const given of [true, false]) {
    const [a, b] = portPair();
    const sent = pattern(size, 3);
    const expected = pattern(size, 3);
    const before = Deno.memoryUsage().external;
    const writer = a.writable.getWriter();
    // The write waits for the reader's credit: a 64 MiB chunk exceeds the window.
    const [, [received]] = await Promise.all([
      writer.write(given ? transfer(sent) : sent),
      readAll(b, size),
    ]);
    const growth = Deno.memoryUsage().external - before;
    assert.equal(received.length, size);
    assertSameBytes(received, expected);
    if (given) {
      assert.equal(sent.byteLength, 0, "the sender's buffer is detached");
      assert.equal(received.buffer.byteLength, size, "the receiver holds that very buffer");
      assert.ok(growth < size / 4, `no second ${size} bytes: external grew by ${growth}`);
    } else {
      assert.equal(sent.byteLength, size, "an ordinary chunk stays the sender's");
      assert.notEqual(received.buffer, sent.buffer);
    }
    writer.releaseLock();
    await Promise.all([a.close(), b.close()]);
  }
});

Deno.test("web worker: a transferred chunk crosses a real worker and back intact", async () => {
  const { a, b, cleanup } = webWorkerRelayPair();
  const size = 8 << 20;
  const sent = pattern(size, 9);
  const writer = a.writable.getWriter();
  const [, chunks] = await Promise.all([writer.write(transfer(sent)), readAll(b, size)]);
  assert.equal(sent.byteLength, 0);
  assert.equal(chunks.length, 1, "one message, not split");
  assertSameBytes(chunks[0], pattern(size, 9));
  writer.releaseLock();
  await cleanup();
});

Deno.test("web worker: what the parent writes before the worker listens is not lost", async () => {
  // Deno drops a message that reaches a worker with no message listener yet; this worker
  // awaits 300 ms at its top level before its transport listens.
  const worker = new Worker(new URL("./_testdata/web_worker_late_echo.ts", import.meta.url), {
    type: "module",
  });
  const transport = workerTransport(worker);
  const writer = transport.writable.getWriter();
  const sent = [new Uint8Array([1, 2, 3]), pattern(200_000, 3), new Uint8Array([4])];
  for (const chunk of sent) await writer.write(chunk);
  const total = sent.reduce((n, chunk) => n + chunk.length, 0);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const chunks = await Promise.race([
    readAll(transport, total),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("the echo never came: a write was lost")), 5000);
    }),
  ]).finally(() => clearTimeout(timer));
  assertSameBytes(concat(chunks), concat(sent));
  await writer.close();
  await transport.close();
  worker.terminate();
});

Deno.test("web worker: small writes of one turn are coalesced into one message", async () => {
  const [a, b] = portPair();
  const writer = a.writable.getWriter();
  for (let i = 0; i < 1000; i++) void writer.write(new Uint8Array(16).fill(i & 0xff));
  await writer.close();
  const chunks = await Array.fromAsync(b.readable);
  const bytes = new Uint8Array(16_000);
  let offset = 0;
  for (const chunk of chunks) bytes.set(chunk, (offset += chunk.length) - chunk.length);
  assert.equal(offset, 16_000);
  for (let i = 0; i < 1000; i++) assert.equal(bytes[i * 16 + 15], i & 0xff, `write ${i}`);
  assert.ok(chunks.length <= 4, `1000 writes arrived in ${chunks.length} messages`);
  await Promise.all([a.close(), b.close()]);
});

Deno.test("web worker: a writer to a peer that does not read stops at the credit window", async () => {
  const windowBytes = 1 << 20;
  const { port1, port2 } = new MessageChannel();
  const a = messagePortTransport(port1, { windowBytes });
  const b = messagePortTransport(port2, { windowBytes });
  const writer = a.writable.getWriter();
  let accepted = 0;
  const writing = (async () => {
    for (let i = 0; i < 64; i++) {
      await writer.ready;
      await writer.write(new Uint8Array(64 * 1024));
      accepted += 64 * 1024;
    }
  })();
  let before = -1;
  while (accepted !== before) {
    before = accepted;
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
  // The window, plus the 256 bytes counted per message, plus the writable's own queue.
  assert.ok(accepted >= windowBytes * 0.75, `only ${accepted} bytes went out`);
  assert.ok(accepted <= windowBytes + 64 * 1024, `${accepted} bytes went out unread`);
  const received = await readAll(b, 64 * 64 * 1024);
  await writing;
  assert.equal(received.reduce((sum, c) => sum + c.length, 0), 64 * 64 * 1024);
  writer.releaseLock();
  await Promise.all([a.close(), b.close()]);
});

Deno.test("web worker: a worker that throws, quits or is terminated fails every pending call", async () => {
  await assertDeathsFailPendingCalls(
    "",
    (worker) => workerTransport(worker),
    "Web Worker transport",
  );
});

Deno.test("web worker: a param given up with transfer() moves to the worker", async () => {
  const worker = new Worker(serviceUrl, { type: "module" });
  const channel = await openChannel<ServiceApi>(workerTransport(worker), { codec: rawCodec() });
  const param = pattern(1 << 20, 5);
  const result = await channel.remote.echo(transfer(param));
  assert.equal(param.byteLength, 0, "the param's buffer went to the worker");
  assertSameBytes(result, pattern(1 << 20, 5));
  await channel.close();
  worker.terminate();
});

Deno.test("web worker: bad arguments are TypeErrors and RangeErrors", () => {
  assert.throws(() => workerTransport({} as Worker), TypeError);
  assert.throws(() => messagePortTransport(null as unknown as MessagePort), TypeError);
  assert.throws(() => selfTransport(), TypeError);
  const { port1, port2 } = new MessageChannel();
  assert.throws(() => messagePortTransport(port1, { windowBytes: 10 }), RangeError);
  assert.throws(() => messagePortTransport(port1, { spinMicros: -1 }), RangeError);
  assert.throws(() => messagePortTransport(port1, { spinMicros: NaN }), RangeError);
  assert.throws(() => transfer([1, 2] as unknown as Uint8Array), TypeError);
  port1.close();
  port2.close();
});

Deno.test("web worker: a large chunk after staged small ones goes in the same message, transferred", async () => {
  const { port1, port2 } = new MessageChannel();
  const a = messagePortTransport(port1);
  const messages: unknown[] = [];
  port2.onmessage = (event) => messages.push(event.data);
  const writer = a.writable.getWriter();
  const head = new Uint8Array([0, 16, 0, 4, 7, 7, 7, 7]); // a large frame's header and head
  const body = pattern(1 << 20, 3);
  void writer.write(head);
  await writer.write(transfer(body));
  assert.equal(body.byteLength, 0, "the body's buffer moved");
  while (messages.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(messages.length, 1, "one message for the header and the body");
  const [first, second] = messages[0] as [Uint8Array, Uint8Array];
  assert.deepEqual(first, head);
  assertSameBytes(second, pattern(1 << 20, 3));
  writer.releaseLock();
  port2.close();
  await a.close();
});

Deno.test("web worker: a side that spins sends an 8-byte shared bell before its first data; the peer stores in it what it posted and what it took", async () => {
  const { port1, port2 } = new MessageChannel();
  const a = messagePortTransport(port1, { spinMicros: 150 });
  const messages: unknown[] = [];
  port2.onmessage = (event) => messages.push(event.data);
  const writer = a.writable.getWriter();
  await writer.write(new Uint8Array([1]));
  while (messages.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
  const [bell, data] = messages;
  assert.ok(bell instanceof Int32Array && bell.buffer instanceof SharedArrayBuffer);
  assert.equal(bell.length, 2);
  assert.deepEqual(data, new Uint8Array([1]));
  // Sent our own bell: `a` stores in it how many data messages it posted (slot 0, after each
  // post) and how many of ours it took (slot 1, as each arrives).
  const ours = new Int32Array(new SharedArrayBuffer(8));
  port2.postMessage(ours);
  while (Atomics.load(ours, 0) === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual([...ours], [1, 0], "caught up with the post before the bell came");
  await writer.write(new Uint8Array([2]));
  while (messages.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(Atomics.load(ours, 0), 2);
  port2.postMessage(new Uint8Array([9]));
  const reader = a.readable.getReader();
  assert.deepEqual((await reader.read()).value, new Uint8Array([9]));
  assert.equal(Atomics.load(ours, 1), 1, "took our data message");
  reader.releaseLock();
  writer.releaseLock();
  port2.close();
  await a.close();
});

Deno.test("web worker: a side that spins waits awake for the answer of a peer that does not spin", async () => {
  // The peer in a worker sends no bell of its own and answers 300 ms after each message. A
  // side that spins (1 s at most) keeps its thread until the answer is posted, so a timer due
  // at once runs only after that; one that does not spin runs the timer long before. (A side
  // spun only when its peer spun as well, until this was fixed.)
  for (const [spinMicros, answeredFirst] of [[1_000_000, true], [0, false]] as const) {
    const worker = new Worker(new URL("./_testdata/web_worker_bell_peer.ts", import.meta.url), {
      type: "module",
    });
    const { port1, port2 } = new MessageChannel();
    const flag = new Int32Array(new SharedArrayBuffer(4));
    worker.postMessage({ port: port2, flag, delayMs: 300 }, [port2]);
    const transport = messagePortTransport(port1, { spinMicros });
    try {
      const reader = transport.readable.getReader();
      const writer = transport.writable.getWriter();
      // A first round trip, answered at once: the peer has our bell (if any) from here on.
      const first = reader.read();
      await writer.write(new Uint8Array([1]));
      assert.deepEqual((await first).value, new Uint8Array([1]));
      const second = reader.read();
      const timer = new Promise<number>((resolve) =>
        setTimeout(() => resolve(Atomics.load(flag, 0)))
      );
      await writer.write(new Uint8Array([2]));
      assert.equal(await timer === 2, answeredFirst, `spinMicros ${spinMicros}`);
      assert.deepEqual((await second).value, new Uint8Array([2]));
      reader.releaseLock();
      writer.releaseLock();
    } finally {
      await transport.close();
      worker.terminate();
    }
  }
});

Deno.test("web worker: the parent's end sends its bell by default (it spins); the worker's end does not", async () => {
  const worker = new Worker(new URL("./_testdata/web_worker_first_messages.ts", import.meta.url), {
    type: "module",
  });
  const report = new Promise<{ kinds: string[] }>((resolve) =>
    worker.addEventListener("message", (event) => {
      if (typeof event.data === "object" && event.data !== null) resolve(event.data);
    })
  );
  const transport = workerTransport(worker);
  const writer = transport.writable.getWriter();
  await writer.write(new Uint8Array([1]));
  assert.deepEqual((await report).kinds, ["Int32Array(2) on SharedArrayBuffer", "Uint8Array"]);
  assert.equal(DEFAULT_PARENT_SPIN_MICROS, 150);
  writer.releaseLock();
  await transport.close();
  worker.terminate();
  // The worker's end: no bell before its data.
  const { port1, port2 } = new MessageChannel();
  const plain = messagePortTransport(port1);
  const messages: unknown[] = [];
  port2.onmessage = (event) => messages.push(event.data);
  const plainWriter = plain.writable.getWriter();
  await plainWriter.write(new Uint8Array([1]));
  while (messages.length < 1) await new Promise((resolve) => setTimeout(resolve, 5));
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(messages, [new Uint8Array([1])]);
  plainWriter.releaseLock();
  port2.close();
  await plain.close();
});

Deno.test("web worker: header and body in one message are read as two chunks, in order", async () => {
  const [a, b] = portPair();
  const writer = a.writable.getWriter();
  const head = new Uint8Array([1, 2, 3]);
  void writer.write(head);
  await writer.write(transfer(pattern(100_000, 5)));
  await writer.write(new Uint8Array([4]));
  const chunks = await readAll(b, 3 + 100_000 + 1);
  assert.deepEqual(chunks[0], head);
  assertSameBytes(chunks[1], pattern(100_000, 5));
  assert.deepEqual(chunks[2], new Uint8Array([4]));
  writer.releaseLock();
  await Promise.all([a.close(), b.close()]);
});
