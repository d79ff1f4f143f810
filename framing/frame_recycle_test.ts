import assert from "node:assert/strict";
import fc from "fast-check";
import type { Transport } from "../transports/types.ts";
import { unix } from "../transports/_test_pairs.ts";
import { encodeFrame, FrameDecoder, FrameReader, MAX_RECYCLED_BUFFERS } from "./frame_decoder.ts";
import { FrameWriter } from "./frame_writer.ts";
import { holdsPattern, pattern } from "./_test_util.ts";

const KIB = 1024;
const MIB = 1024 * KIB;

/** Writes frames of `sizes` (frame i holds pattern(i, size)), then closes the writable. */
async function writeFrames(transport: Transport, sizes: readonly number[]): Promise<void> {
  const writer = new FrameWriter(transport.writable);
  for (const [i, size] of sizes.entries()) {
    writer.write(pattern(i, size));
    if (writer.desiredSize <= 0) await writer.ready;
  }
  await writer.close();
}

/**
 * Reads frames to the end through a FrameReader, calling `onFrame` with each as it comes
 * (before the next read, as a channel delivers them).
 */
async function readFrames(
  source: Transport,
  onFrame: (frame: Uint8Array, i: number, decoder: FrameDecoder) => void,
): Promise<FrameDecoder> {
  const decoder = new FrameDecoder();
  const reader = new FrameReader(source, decoder);
  let i = 0;
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    decoder.push(r.value);
    for (let frame = decoder.next(); frame !== undefined; frame = decoder.next()) {
      onFrame(frame, i++, decoder);
    }
  }
  decoder.end();
  return decoder;
}

/** Pushes `bytes` as two chunks, so that a frame of more than `first` bytes spans them. */
function receive(decoder: FrameDecoder, bytes: Uint8Array, first = 1000): Uint8Array[] {
  const frames: Uint8Array[] = [];
  for (const chunk of [bytes.subarray(0, first), bytes.subarray(first)]) {
    decoder.push(chunk);
    for (let frame = decoder.next(); frame !== undefined; frame = decoder.next()) {
      frames.push(frame);
    }
  }
  return frames;
}

Deno.test("recycle: over a Unix socket, 1 MiB frames handed back reuse one buffer, each frame intact", async () => {
  const { a, b, cleanup } = await unix.pair();
  try {
    const sizes = Array.from({ length: 24 }, () => MIB);
    let taken = 0;
    const [, decoder] = await Promise.all([
      writeFrames(a, sizes),
      readFrames(b, (frame, i, decoder) => {
        assert.ok(holdsPattern(frame, i, MIB), `frame ${i} holds its own bytes`);
        if (decoder.recycle(frame)) {
          taken++;
          assert.equal(frame.length, 0, "a recycled frame is detached");
        }
      }),
    ]);
    // The first frames may arrive inside a read (views of the read buffer, not recyclable);
    // once frames are read into their own buffers each is taken back and reused by the next.
    assert.ok(taken >= sizes.length - 3, `${taken} of ${sizes.length} recycled`);
    assert.equal(decoder.buffersAllocated, 1, "every frame after the first reused its buffer");
  } finally {
    await cleanup();
  }
});

Deno.test("recycle: 64 KiB frames, several to a read, come in buffers of their own once they are handed back", async () => {
  const { a, b, cleanup } = await unix.pair();
  try {
    const sizes = Array.from({ length: 80 }, () => 64 * KIB);
    let taken = 0;
    const [, decoder] = await Promise.all([
      writeFrames(a, sizes),
      readFrames(b, (frame, i, decoder) => {
        assert.ok(holdsPattern(frame, i, 64 * KIB), `frame ${i} holds its own bytes`);
        if (decoder.recycle(frame)) taken++;
      }),
    ]);
    // The first frame handed back is a view of the read buffer (refused), as are the others
    // of that read; from the next read on, each frame is read into a buffer of its own.
    assert.ok(taken >= sizes.length - 8, `${taken} of ${sizes.length} recycled`);
    assert.ok(decoder.buffersAllocated <= 3, `${decoder.buffersAllocated} buffers allocated`);
  } finally {
    await cleanup();
  }
});

Deno.test("recycle: frames kept while others are recycled are never overwritten", async () => {
  const { a, b, cleanup } = await unix.pair();
  try {
    const sizes = [MIB, 200 * KIB, MIB, 10, MIB, MIB, 70 * KIB, MIB, MIB, 5, MIB, 200 * KIB, MIB];
    const kept: Array<[Uint8Array, number]> = [];
    await Promise.all([
      writeFrames(a, sizes),
      readFrames(b, (frame, i, decoder) => {
        assert.ok(holdsPattern(frame, i, sizes[i]), `frame ${i} holds its own bytes`);
        if (i % 3 === 0) kept.push([frame, i]);
        else decoder.recycle(frame);
      }),
    ]);
    for (const [frame, i] of kept) assert.ok(holdsPattern(frame, i, sizes[i]), `kept frame ${i}`);
  } finally {
    await cleanup();
  }
});

Deno.test("recycle: refuses small frames, views of a chunk, foreign bytes and a second recycle", () => {
  const decoder = new FrameDecoder();
  // A small frame that spans chunks has a buffer of its own, but below 64 KiB it is not worth
  // pooling.
  const [small] = receive(decoder, encodeFrame(new Uint8Array(1000).fill(1)), 100);
  assert.equal(small.length, 1000);
  assert.equal(decoder.recycle(small), false);
  // A large frame inside one chunk is a view of that chunk, which other frames share.
  decoder.push(encodeFrame(new Uint8Array(100 * KIB).fill(2)));
  const view = decoder.next()!;
  assert.equal(view.length, 100 * KIB);
  assert.equal(decoder.recycle(view), false);
  assert.equal(decoder.next(), undefined);
  assert.equal(decoder.recycle(new Uint8Array(100 * KIB)), false, "foreign bytes");

  const [large] = receive(decoder, encodeFrame(new Uint8Array(100 * KIB).fill(3)));
  const part = large.subarray(10, 20);
  assert.equal(decoder.recycle(part), true, "a view into the frame hands back the frame");
  assert.equal(large.length, 0);
  assert.equal(part.length, 0);
  assert.equal(decoder.recycle(large), false, "recycled already");
  assert.equal(decoder.recycle(part), false, "recycled already");
  // Refused bytes stay as they were.
  assert.ok(small.every((byte) => byte === 1));
  assert.ok(view.every((byte) => byte === 2));
});

Deno.test("recycle: a frame still being assembled cannot be recycled", () => {
  const decoder = new FrameDecoder();
  const bytes = encodeFrame(pattern(0, 100 * KIB));
  decoder.push(bytes.subarray(0, 1000));
  assert.equal(decoder.next(), undefined);
  const target = decoder.readTarget()!;
  assert.equal(decoder.recycle(target), false, "the unfinished frame's buffer");
  target.set(bytes.subarray(1000));
  decoder.push(target);
  const frame = decoder.next()!;
  assert.ok(holdsPattern(frame, 0, 100 * KIB));
  assert.equal(decoder.recycle(frame), true, "once whole and returned");
});

Deno.test("recycle: a pooled buffer goes only to a frame of its size, and only once", () => {
  const decoder = new FrameDecoder();
  const [first] = receive(decoder, encodeFrame(pattern(0, 100 * KIB)));
  assert.equal(decoder.recycle(first), true);
  assert.equal(decoder.buffersAllocated, 1);
  // Another size allocates; the pooled 100 KiB buffer waits.
  const [other] = receive(decoder, encodeFrame(pattern(1, 90 * KIB)));
  assert.ok(holdsPattern(other, 1, 90 * KIB));
  assert.equal(decoder.buffersAllocated, 2);
  // Two frames of 100 KiB at once: the first takes the pooled buffer, the second needs a new
  // one, so the two never share memory.
  const bytes = new Uint8Array([
    ...encodeFrame(pattern(2, 100 * KIB)),
    ...encodeFrame(pattern(3, 100 * KIB)),
  ]);
  const frames: Uint8Array[] = [];
  for (let offset = 0; offset < bytes.length; offset += 30 * KIB) {
    decoder.push(bytes.subarray(offset, offset + 30 * KIB));
    for (let frame = decoder.next(); frame !== undefined; frame = decoder.next()) {
      frames.push(frame);
    }
  }
  assert.equal(frames.length, 2);
  assert.equal(decoder.buffersAllocated, 3);
  assert.notEqual(frames[0].buffer, frames[1].buffer);
  assert.ok(holdsPattern(frames[0], 2, 100 * KIB));
  assert.ok(holdsPattern(frames[1], 3, 100 * KIB));
});

Deno.test(`recycle: the pool keeps at most MAX_RECYCLED_BUFFERS (${MAX_RECYCLED_BUFFERS}) buffers`, () => {
  const decoder = new FrameDecoder();
  const count = MAX_RECYCLED_BUFFERS + 3;
  const frames = Array.from(
    { length: count },
    (_, i) => receive(decoder, encodeFrame(pattern(i, 100 * KIB)))[0],
  );
  assert.equal(decoder.buffersAllocated, count);
  for (const frame of frames) assert.equal(decoder.recycle(frame), true);
  for (let i = 0; i < count; i++) {
    const [frame] = receive(decoder, encodeFrame(pattern(i, 100 * KIB)));
    assert.ok(holdsPattern(frame, i, 100 * KIB));
  }
  // Only MAX_RECYCLED_BUFFERS of the recycled buffers were kept for the next frames.
  assert.equal(decoder.buffersAllocated, count + count - MAX_RECYCLED_BUFFERS);
});

/** One step of the property test: a frame, how its bytes arrive, and what the app does. */
interface Step {
  size: number;
  /** Cut the frame's bytes into chunks of at most this size (when no read target is offered). */
  chunk: number;
  /** Whether reads into a read target transfer its buffer, as a BYOB read does. */
  transfer: boolean;
  /** Recycle the frame once received, or keep it to the end. */
  recycle: boolean;
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  size: fc.oneof(
    fc.integer({ min: 0, max: 300 }),
    fc.integer({ min: 64 * KIB - 2, max: 64 * KIB + 2 }),
    fc.constantFrom(70 * KIB, 100 * KIB, 130 * KIB),
  ),
  chunk: fc.integer({ min: 1, max: 150 * KIB }),
  transfer: fc.boolean(),
  recycle: fc.boolean(),
});

Deno.test("recycle: any frame sizes, chunking and recycle choices decode every frame correctly", () => {
  fc.assert(
    fc.property(fc.array(stepArb, { minLength: 1, maxLength: 30 }), (steps) => {
      const stream = new Uint8Array(
        steps.reduce((sum, { size }) => sum + 4 + size, 0),
      );
      let at = 0;
      for (const [i, { size }] of steps.entries()) {
        stream.set(encodeFrame(pattern(i, size)), at);
        at += 4 + size;
      }
      const decoder = new FrameDecoder();
      const kept: Array<[Uint8Array, number]> = [];
      let sent = 0;
      let received = 0;
      while (sent < stream.length) {
        // The step of the frame being received decides how its bytes arrive.
        const step = steps[Math.min(received, steps.length - 1)];
        const target = decoder.readTarget();
        let chunk: Uint8Array;
        if (target !== undefined) {
          const n = Math.min(target.length, step.chunk, stream.length - sent);
          target.set(stream.subarray(sent, sent + n));
          // Read before the transfer, which leaves the target reading as empty at offset 0.
          const offset = target.byteOffset;
          chunk = step.transfer
            ? new Uint8Array((target.buffer as ArrayBuffer).transfer(), offset, n)
            : target.subarray(0, n);
        } else {
          chunk = stream.subarray(sent, sent + step.chunk);
        }
        sent += chunk.length;
        decoder.push(chunk);
        for (let frame = decoder.next(); frame !== undefined; frame = decoder.next()) {
          const i = received++;
          if (!holdsPattern(frame, i, steps[i].size)) return false;
          if (steps[i].recycle) decoder.recycle(frame);
          else kept.push([frame, i]);
        }
      }
      decoder.end();
      return received === steps.length &&
        kept.every(([frame, i]) => holdsPattern(frame, i, steps[i].size));
    }),
    { numRuns: 150 },
  );
});
