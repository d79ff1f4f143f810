import assert from "node:assert/strict";
import fc from "fast-check";
import { FrameDecoder } from "../framing/frame_decoder.ts";
import { FrameReader } from "../framing/frame_decoder.ts";
import { FrameWriter } from "../framing/frame_writer.ts";
import { testTransportConformance } from "./_conformance.ts";
import { assertDeathsFailPendingCalls } from "./_test_thread_failures.ts";
import { sharedRingLocalPair, sharedRingRelayPair } from "./_test_thread_pairs.ts";
import { sharedRingPair, sharedRingTransport } from "./shared_ring.ts";

const stuckUrl = new URL("./_testdata/shared_ring_stuck.ts", import.meta.url);

function stuckPeer() {
  const worker = new Worker(stuckUrl, { type: "module" });
  const [mine, theirs] = sharedRingPair({ ringBytes: 64 * 1024 });
  worker.postMessage(theirs, [theirs.port]);
  return Promise.resolve({
    transport: sharedRingTransport(mine, { worker }),
    kill: () => Promise.resolve(worker.terminate()),
    cleanup: () => Promise.resolve(worker.terminate()),
  });
}

testTransportConformance({
  name: "shared ring (one thread)",
  pair: () => Promise.resolve(sharedRingLocalPair({ ringBytes: 64 * 1024 })),
  stuckPeer,
  abortSeenByPeer: "error",
});

testTransportConformance({
  name: "shared ring (two threads)",
  pair: () => Promise.resolve(sharedRingRelayPair()),
  stuckPeer,
  abortSeenByPeer: "error",
});

/** A frame's bytes, telling its index and size apart in every byte. */
function frameBytes(index: number, size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (index * 131 + i * 7 + (i >> 8)) & 0xff;
  return bytes;
}

interface Step {
  size: number;
  /** What the writer does after queueing the frame. */
  then: "nothing" | "flush" | "macrotask";
}

/** Writes `steps` as frames, doing what each says after it; flushes at the end. */
async function writeSteps(writer: FrameWriter, steps: Step[]): Promise<void> {
  for (const [i, step] of steps.entries()) {
    writer.write(frameBytes(i, step.size));
    if (step.then === "flush") await writer.flush();
    else if (step.then === "macrotask") await new Promise((resolve) => setTimeout(resolve, 0));
    if (writer.desiredSize <= 0) await writer.ready;
  }
  await writer.flush();
}

/**
 * Reads until every frame of `steps` arrived (or, with `toEnd`, the stream ended), pausing for
 * a macrotask before the reads `delays` says, and checks each frame is whole and in order.
 */
async function receiveSteps(
  reader: FrameReader,
  decoder: FrameDecoder,
  steps: Step[],
  delays: number[],
  toEnd: boolean,
): Promise<void> {
  let index = 0;
  for (let reads = 0; toEnd || index < steps.length; reads++) {
    if (delays[reads % delays.length] > 0) await new Promise((r) => setTimeout(r, 0));
    const { value, done } = await reader.read();
    if (done && toEnd) break;
    assert.ok(!done, `the stream ended after ${index} of ${steps.length} frames`);
    decoder.push(value);
    for (let frame = decoder.next(); frame !== undefined; frame = decoder.next()) {
      const expected = frameBytes(index, steps[index]?.size ?? -1);
      if (frame.length !== expected.length || frame.some((byte, i) => byte !== expected[i])) {
        assert.fail(`frame ${index} (${steps[index]?.size} bytes) arrived torn: ${frame.length}`);
      }
      index++;
    }
  }
  assert.equal(index, steps.length, "every frame arrived");
}

const stepsArbitrary = fc.array(
  fc.record({
    // Mostly small, some past half the 1 KiB ring (those go by message), some empty.
    size: fc.oneof(
      { weight: 6, arbitrary: fc.nat(300) },
      { weight: 2, arbitrary: fc.integer({ min: 300, max: 1100 }) },
      { weight: 1, arbitrary: fc.integer({ min: 1100, max: 20_000 }) },
    ),
    then: fc.constantFrom<Step["then"]>("nothing", "nothing", "flush", "macrotask"),
  }),
  { maxLength: 120 },
);

Deno.test("shared ring: random frame sizes and interleavings arrive untorn, none lost (one thread)", async () => {
  await fc.assert(
    fc.asyncProperty(
      stepsArbitrary,
      fc.array(fc.nat(1), { minLength: 1 }),
      async (steps, delays) => {
        const { a, b, cleanup } = sharedRingLocalPair({ ringBytes: 1024 });
        try {
          const writer = new FrameWriter(a.writable);
          const decoder = new FrameDecoder();
          await Promise.all([
            writeSteps(writer, steps).then(() => writer.close()),
            receiveSteps(new FrameReader(b, decoder), decoder, steps, delays, true),
          ]);
          decoder.end();
        } finally {
          await cleanup();
        }
      },
    ),
    { numRuns: 150 },
  );
});

Deno.test("shared ring: random frame sizes and interleavings arrive untorn, none lost (two threads)", async () => {
  // Through a worker: the writer and the reader of each ring run truly at once.
  const { a, b, cleanup } = sharedRingRelayPair({ ringBytes: 1024 });
  // One long-lived pair: each run's frames follow the last's, so every run ends with a flush.
  const aWriter = new FrameWriter(a.writable);
  const decoder = new FrameDecoder();
  const reader = new FrameReader(b, decoder);
  try {
    await fc.assert(
      fc.asyncProperty(
        stepsArbitrary,
        fc.array(fc.nat(1), { minLength: 1 }),
        async (steps, delays) => {
          await Promise.all([
            writeSteps(aWriter, steps),
            receiveSteps(reader, decoder, steps, delays, false),
          ]);
        },
      ),
      { numRuns: 40 },
    );
  } finally {
    await aWriter.close().catch(() => {});
    reader.releaseLock();
    await cleanup();
  }
});

Deno.test("shared ring: a full ring holds the writer back, and nothing is lost", async () => {
  const ringBytes = 4096;
  const [mine, theirs] = sharedRingPair({ ringBytes });
  const a = sharedRingTransport(mine, { spinMicros: 0 });
  const b = sharedRingTransport(theirs, { spinMicros: 0 });
  const writer = a.writable.getWriter();
  let accepted = 0;
  const chunks = 2000;
  const writing = (async () => {
    for (let i = 0; i < chunks; i++) {
      await writer.write(new Uint8Array(100).fill(i & 0xff));
      accepted++;
    }
    await writer.close();
  })();
  let before = -1;
  while (accepted !== before) {
    before = accepted;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // Each 100-byte write takes a 104-byte record: the ring holds 39 of them, the writer's
  // next write waits for room.
  assert.equal(accepted, Math.floor(ringBytes / 104));
  const received = new Uint8Array(chunks * 100);
  let offset = 0;
  for await (const chunk of b.readable) {
    received.set(chunk, offset);
    offset += chunk.length;
  }
  await writing;
  assert.equal(offset, chunks * 100);
  for (let i = 0; i < chunks; i++) assert.equal(received[i * 100 + 99], i & 0xff, `write ${i}`);
  await Promise.all([a.close(), b.close()]);
});

Deno.test("shared ring: bad arguments are TypeErrors and RangeErrors", () => {
  assert.throws(() => sharedRingPair({ ringBytes: 3000 }), RangeError);
  assert.throws(() => sharedRingPair({ ringBytes: 512 }), RangeError);
  assert.throws(() => sharedRingTransport({} as never), TypeError);
  const [mine, theirs] = sharedRingPair({ ringBytes: 1024 });
  assert.throws(() => sharedRingTransport(mine, { spinMicros: -1 }), RangeError);
  mine.port.close();
  theirs.port.close();
});

Deno.test("shared ring: a worker that throws, quits or is terminated fails every pending call", async () => {
  await assertDeathsFailPendingCalls("?over=ring", (worker) => {
    const [mine, theirs] = sharedRingPair();
    worker.postMessage(theirs, [theirs.port]);
    return sharedRingTransport(mine, { worker });
  }, "shared ring transport");
});

/** This thread's end of a ring to a worker that echoes every chunk. */
function echoWorker(spinMicros: number, workerSpinMicros: number) {
  const worker = new Worker(new URL("./_testdata/shared_ring_echo.ts", import.meta.url), {
    type: "module",
  });
  const [mine, theirs] = sharedRingPair();
  worker.postMessage({ end: theirs, spinMicros: workerSpinMicros }, [theirs.port]);
  const transport = sharedRingTransport(mine, { spinMicros, worker });
  return {
    writer: transport.writable.getWriter(),
    reader: transport.readable.getReader(),
    async [Symbol.asyncDispose]() {
      this.writer.releaseLock();
      this.reader.releaseLock();
      await transport.close();
      worker.terminate();
    },
  };
}

Deno.test("shared ring: a read that waits before this side writes spins only after the write, which is not held back", async () => {
  // A 1 s spin: had the read spun as soon as it was asked for (before the write below was
  // made), the write, and so the echo, would have waited for the whole spin.
  await using echo = echoWorker(1_000_000, 50);
  const message = new Uint8Array([1, 2, 3]);
  await echo.writer.write(message);
  assert.deepEqual((await echo.reader.read()).value, message); // the worker is up
  const started = performance.now();
  for (let i = 0; i < 20; i++) {
    const reading = echo.reader.read();
    await echo.writer.write(message);
    assert.deepEqual((await reading).value, message);
  }
  const elapsed = performance.now() - started;
  assert.ok(elapsed < 500, `20 round trips took ${elapsed.toFixed(0)} ms`);
});

Deno.test("shared ring: spins that mostly miss, or none at all, lose no wake-up", async () => {
  for (const [spin, workerSpin] of [[1, 1], [0, 0], [1, 0], [50, 1]]) {
    await using echo = echoWorker(spin, workerSpin);
    for (let i = 0; i < 2_000; i++) {
      const message = new Uint8Array([i & 255, i >> 8]);
      await echo.writer.write(message);
      // Now and then a task between trips, so that both sides sleep as well as spin.
      if (i % 97 === 0) await new Promise((resolve) => setTimeout(resolve, 0));
      assert.deepEqual((await echo.reader.read()).value, message, `trip ${i}`);
    }
  }
});

Deno.test("shared ring: at most one chunk too large for the ring is unread at a time, and order holds", async () => {
  const [mine, theirs] = sharedRingPair({ ringBytes: 1024 });
  const a = sharedRingTransport(mine, { spinMicros: 0 });
  const b = sharedRingTransport(theirs, { spinMicros: 0 });
  const writer = a.writable.getWriter();
  const reader = b.readable.getReader();
  try {
    const small = new Uint8Array([9, 9]);
    const first = new Uint8Array(4000).fill(1);
    const second = new Uint8Array(5000).fill(2);
    await writer.write(small);
    await writer.write(first); // posted at once, behind the small chunk still unread
    let secondWritten = false;
    const writing = writer.write(second).then(() => secondWritten = true);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(secondWritten, false, "a second large chunk waits while the first is unread");
    assert.deepEqual((await reader.read()).value, small);
    assert.deepEqual((await reader.read()).value, first);
    await writing;
    assert.deepEqual((await reader.read()).value, second);
  } finally {
    writer.releaseLock();
    reader.releaseLock();
    await Promise.all([a.close(), b.close()]);
  }
});
