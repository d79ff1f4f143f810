import assert from "node:assert/strict";
import fc from "fast-check";
import { FrameTooLargeError } from "../errors.ts";
import { concat, payloadArb } from "./_test_util.ts";
import { encodeFrame, FrameDecoder } from "./frame_decoder.ts";
import { DEFAULT_MAX_BATCH_BYTES, FrameEncoderStream } from "./frame_encoder_stream.ts";

/** Resolves after `hops` microtasks: still in this macrotask, before any timer. */
async function microtasks(hops: number): Promise<"timeout"> {
  for (let i = 0; i < hops; i++) await undefined;
  return "timeout";
}

function decode(chunks: Uint8Array[]): Uint8Array[] {
  const decoder = new FrameDecoder();
  const frames: Uint8Array[] = [];
  for (const chunk of chunks) {
    decoder.push(chunk);
    for (let f = decoder.next(); f !== undefined; f = decoder.next()) frames.push(f.slice());
  }
  decoder.end();
  return frames;
}

Deno.test("FrameEncoderStream: any frames round-trip; chunks stay within maxBatchBytes", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.oneof(
          { weight: 9, arbitrary: payloadArb() },
          { weight: 1, arbitrary: fc.integer({ min: 1000, max: 3000 }).map((n) => bytes(n)) },
        ),
        { maxLength: 60 },
      ),
      fc.integer({ min: 64, max: 2048 }),
      fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
      async (frames, maxBatchBytes, pauses) => {
        const encoder = new FrameEncoderStream({ maxBatchBytes });
        const reading = Array.fromAsync(encoder.readable);
        const writer = encoder.writable.getWriter();
        for (const [i, frame] of frames.entries()) {
          // Sometimes wait for the write (a slow producer), sometimes fire and forget.
          if (pauses[i % pauses.length]) await writer.write(frame);
          else writer.write(frame).catch(() => {});
        }
        await writer.close();
        const chunks = await reading;
        assert.deepEqual(decode(chunks), frames);
        for (const chunk of chunks) {
          assert.ok(
            chunk.length <= maxBatchBytes || frames.includes(chunk),
            `a ${chunk.length}-byte chunk is neither within ${maxBatchBytes} nor a payload`,
          );
        }
      },
    ),
    { numRuns: 150 },
  );
});

Deno.test("FrameEncoderStream: frames written while the consumer is busy arrive in few chunks", async () => {
  const encoder = new FrameEncoderStream();
  const writer = encoder.writable.getWriter();
  const frames = Array.from({ length: 3000 }, (_, i) => bytes(40 + (i % 50)));
  const writes = frames.map((frame) => writer.write(frame));
  const closing = writer.close();
  const chunks = await Array.fromAsync(encoder.readable);
  await Promise.all([...writes, closing]);
  const total = frames.reduce((sum, f) => sum + 4 + f.length, 0);
  assert.ok(total > 3 * DEFAULT_MAX_BATCH_BYTES);
  assert.ok(
    chunks.length <= Math.ceil(total / DEFAULT_MAX_BATCH_BYTES) + 1,
    `${chunks.length} chunks for ${total} bytes`,
  );
  for (const chunk of chunks) assert.ok(chunk.length <= DEFAULT_MAX_BATCH_BYTES);
  assert.deepEqual(decode(chunks), frames);
});

Deno.test("FrameEncoderStream: frames written in one turn while the reader waits share a chunk", async () => {
  const encoder = new FrameEncoderStream();
  const reader = encoder.readable.getReader();
  const writer = encoder.writable.getWriter();
  const reading = reader.read();
  for (let i = 0; i < 100; i++) writer.write(bytes(10));
  const { value } = await reading;
  assert.equal(value?.length, 100 * 14);
  await writer.close();
  assert.equal((await reader.read()).done, true);
});

Deno.test("FrameEncoderStream: a lone frame arrives without waiting for a timer", async () => {
  const encoder = new FrameEncoderStream();
  const reader = encoder.readable.getReader();
  const writer = encoder.writable.getWriter();
  const reading = reader.read();
  writer.write(new Uint8Array([1, 2, 3]));
  // Any timer, even setTimeout(0), fires only after every queued microtask has run.
  const first = await Promise.race([reading, microtasks(10_000)]);
  assert.notEqual(first, "timeout");
  assert.deepEqual(
    (first as ReadableStreamReadResult<Uint8Array>).value,
    encodeFrame(new Uint8Array([1, 2, 3])),
  );
  // Same when the frame is written before the reader asks.
  writer.write(new Uint8Array([4]));
  const second = await Promise.race([reader.read(), microtasks(10_000)]);
  assert.notEqual(second, "timeout");
  await writer.close();
  reader.releaseLock();
});

Deno.test("FrameEncoderStream: a large payload passes through without being copied", async () => {
  const large = bytes(1024 * 1024);
  const small = bytes(5);
  const encoder = new FrameEncoderStream();
  const reading = Array.fromAsync(encoder.readable);
  const writer = encoder.writable.getWriter();
  writer.write(small);
  writer.write(large);
  writer.write(small);
  await writer.close();
  const chunks = await reading;
  const passed = chunks.find((chunk) => chunk.length === large.length);
  assert.equal(passed, large, "the very payload written, not a copy");
  assert.equal(chunks.length, 3);
  assert.deepEqual(chunks[0], concat([encodeFrame(small), new Uint8Array([0, 0x10, 0, 0])]));
  assert.deepEqual(decode(chunks), [small, large, small]);
});

Deno.test("FrameEncoderStream: a fast producer waits for a slow consumer (backpressure)", async () => {
  const encoder = new FrameEncoderStream({ maxBatchBytes: 1024 });
  const writer = encoder.writable.getWriter();
  let resolved = 0;
  for (let i = 0; i < 40; i++) writer.write(bytes(100)).then(() => resolved++);
  await microtasks(1000);
  // The batch is full at 1 KiB: writes stop being accepted until someone reads.
  assert.ok(resolved < 40, `${resolved} writes resolved with nobody reading`);
  const reader = encoder.readable.getReader();
  let frames = 0;
  const closing = writer.close();
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    frames += decode([r.value]).length;
  }
  await closing;
  assert.equal(resolved, 40);
  assert.equal(frames, 40);
});

Deno.test("FrameEncoderStream: an oversize payload errors both sides with FrameTooLargeError", async () => {
  const encoder = new FrameEncoderStream({ maxFrameBytes: 8 });
  const reader = encoder.readable.getReader();
  const writer = encoder.writable.getWriter();
  const reading = reader.read();
  await assert.rejects(writer.write(bytes(9)), (error) => {
    assert.ok(error instanceof FrameTooLargeError);
    assert.equal(error.size, 9);
    assert.equal(error.limit, 8);
    return true;
  });
  await assert.rejects(reading, FrameTooLargeError);
  await assert.rejects(writer.closed, FrameTooLargeError);
});

Deno.test("FrameEncoderStream: aborting the writable errors the readable, even mid-write", async () => {
  const encoder = new FrameEncoderStream({ maxBatchBytes: 64 });
  const writer = encoder.writable.getWriter();
  await writer.write(bytes(60));
  // Would overflow the batch, so this write waits for a reader that never comes.
  const stuck = writer.write(bytes(10));
  let settled = false;
  stuck.finally(() => settled = true).catch(() => {});
  await microtasks(100);
  assert.equal(settled, false);
  const reason = new Error("producer gave up");
  const rejected = assert.rejects(stuck, (error) => error === reason);
  await writer.abort(reason);
  await rejected;
  await assert.rejects(encoder.readable.getReader().read(), (error) => error === reason);
});

Deno.test("FrameEncoderStream: aborting while the reader waits rejects the read", async () => {
  const encoder = new FrameEncoderStream();
  const reader = encoder.readable.getReader();
  const reason = new Error("stop");
  const rejected = assert.rejects(reader.read(), (error) => error === reason);
  await encoder.writable.abort(reason);
  await rejected;
});

Deno.test("FrameEncoderStream: cancelling the readable errors the writable", async () => {
  const encoder = new FrameEncoderStream({ maxBatchBytes: 64 });
  const writer = encoder.writable.getWriter();
  await writer.write(bytes(60));
  const stuck = writer.write(bytes(10));
  let settled = false;
  stuck.finally(() => settled = true).catch(() => {});
  await microtasks(100);
  assert.equal(settled, false);
  const reason = new Error("consumer gone");
  const rejected = assert.rejects(stuck, (error) => error === reason);
  await encoder.readable.cancel(reason);
  await rejected;
  await assert.rejects(writer.write(bytes(1)), (error) => error === reason);
  await assert.rejects(writer.closed, (error) => error === reason);
});

Deno.test("FrameEncoderStream: closing delivers the queued frames, then ends", async () => {
  const encoder = new FrameEncoderStream();
  const writer = encoder.writable.getWriter();
  writer.write(bytes(3));
  writer.write(new Uint8Array(0));
  await writer.close();
  const chunks = await Array.fromAsync(encoder.readable);
  assert.deepEqual(decode(chunks), [bytes(3), new Uint8Array(0)]);
});

Deno.test("FrameEncoderStream: options out of range are a RangeError", () => {
  assert.throws(() => new FrameEncoderStream({ maxBatchBytes: 63 }), RangeError);
  assert.throws(() => new FrameEncoderStream({ maxFrameBytes: -1 }), RangeError);
});

function bytes(length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = (i * 7 + length) & 0xff;
  return out;
}
