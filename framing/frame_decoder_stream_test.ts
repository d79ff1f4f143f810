import assert from "node:assert/strict";
import fc from "fast-check";
import { FrameTooLargeError, FramingError, TruncatedFrameError } from "../errors.ts";
import { chunkingArb, concat, payloadArb } from "./_test_util.ts";
import { encodeFrame } from "./frame_decoder.ts";
import { FrameDecoderStream } from "./frame_decoder_stream.ts";

Deno.test("FrameDecoderStream: any frames, re-chunked at random, decode to the same frames", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(payloadArb(), { maxLength: 30 }),
      chunkingArb(),
      async (frames, rechunk) => {
        const chunks = rechunk(concat(frames.map(encodeFrame)));
        const decoded = await Array.fromAsync(
          ReadableStream.from(chunks).pipeThrough(new FrameDecoderStream()),
        );
        assert.deepEqual(decoded.map((f) => f.slice()), frames);
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("FrameDecoderStream: frames inside a chunk come out as views of it", async () => {
  const chunk = concat([encodeFrame(new Uint8Array([1])), encodeFrame(new Uint8Array([2, 3]))]);
  const frames = await Array.fromAsync(
    ReadableStream.from([chunk]).pipeThrough(new FrameDecoderStream()),
  );
  assert.equal(frames.length, 2);
  for (const frame of frames) assert.equal(frame.buffer, chunk.buffer);
});

Deno.test("FrameDecoderStream: an oversize header errors the stream before the payload", async () => {
  const { readable, writable } = new FrameDecoderStream({ maxFrameBytes: 1024 });
  const writer = writable.getWriter();
  const reader = readable.getReader();
  const reading = reader.read();
  // Only the header of a 1 GiB frame is ever sent.
  const writing = writer.write(new Uint8Array([0x40, 0, 0, 0]));
  await assert.rejects(reading, (error) => {
    assert.ok(error instanceof FrameTooLargeError);
    assert.equal(error.size, 1024 ** 3);
    assert.equal(error.limit, 1024);
    return true;
  });
  await assert.rejects(writing, FrameTooLargeError);
  await assert.rejects(writer.closed, FrameTooLargeError);
});

Deno.test("FrameDecoderStream: the input ending mid-frame errors with the missing count", async () => {
  const bytes = encodeFrame(new Uint8Array(10));
  const stream = ReadableStream.from([bytes.subarray(0, 6), bytes.subarray(6, 9)])
    .pipeThrough(new FrameDecoderStream());
  await assert.rejects(Array.fromAsync(stream), (error) => {
    assert.ok(error instanceof TruncatedFrameError);
    assert.equal(error.missing, 5);
    return true;
  });
});

Deno.test("FrameDecoderStream: frames decoded before a truncation are still delivered", async () => {
  const bytes = concat([encodeFrame(new Uint8Array([7])), new Uint8Array([0, 0])]);
  const reader = ReadableStream.from([bytes]).pipeThrough(new FrameDecoderStream()).getReader();
  assert.deepEqual((await reader.read()).value, new Uint8Array([7]));
  await assert.rejects(reader.read(), { name: "TruncatedFrameError", missing: 2 });
});

Deno.test("FrameDecoderStream: random garbage ends or errors with a FramingError", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.uint8Array({ maxLength: 3000 }),
      chunkingArb(),
      fc.integer({ min: 0, max: 4096 }),
      async (garbage, rechunk, maxFrameBytes) => {
        const stream = ReadableStream.from(rechunk(garbage))
          .pipeThrough(new FrameDecoderStream({ maxFrameBytes }));
        try {
          await Array.fromAsync(stream);
        } catch (error) {
          assert.ok(error instanceof FramingError, `unexpected ${error}`);
        }
      },
    ),
    { numRuns: 300 },
  );
});
