import assert from "node:assert/strict";
import fc from "fast-check";
import { FrameTooLargeError } from "../errors.ts";
import { chunkingArb, concat } from "./_test_util.ts";
import { DEFAULT_MAX_LINE_BYTES, NdjsonDecoderStream } from "./ndjson_decoder_stream.ts";

const encoder = new TextEncoder();

function decode(chunks: Uint8Array[], maxLineBytes?: number): Promise<Uint8Array[]> {
  return Array.fromAsync(
    ReadableStream.from(chunks).pipeThrough(new NdjsonDecoderStream({ maxLineBytes })),
  );
}

/** A line's content: any bytes but `\n`, not empty, not ending in `\r`. */
const lineArb = fc.uint8Array({ minLength: 1, maxLength: 60 })
  .map((bytes) => bytes.map((b) => b === 0x0a ? 0x20 : b))
  .filter((bytes) => bytes[bytes.length - 1] !== 0x0d);

Deno.test("NdjsonDecoderStream: any lines, any endings, re-chunked at random, decode the same", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.tuple(lineArb, fc.constantFrom("\n", "\r\n"), fc.constantFrom("", "\n", "\r\n\n")),
        { maxLength: 30 },
      ),
      fc.boolean(),
      chunkingArb(),
      async (lines, terminated, rechunk) => {
        const parts = lines.flatMap(([line, end, blank]) => [line, encoder.encode(end + blank)]);
        if (!terminated && parts.length > 0) parts.pop();
        const decoded = await decode(rechunk(concat(parts)));
        assert.deepEqual(decoded.map((l) => l.slice()), lines.map(([line]) => line));
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("NdjsonDecoderStream: lines inside a chunk are views of it", async () => {
  const chunk = encoder.encode('{"a":1}\r\n{"b":2}\n');
  const lines = await decode([chunk]);
  assert.equal(lines.length, 2);
  for (const line of lines) assert.equal(line.buffer, chunk.buffer);
  assert.deepEqual(lines[0], encoder.encode('{"a":1}'));
});

Deno.test("NdjsonDecoderStream: empty and CR-only lines are skipped", async () => {
  const lines = await decode([encoder.encode("\n\r\n\n a\n\r\n")]);
  assert.deepEqual(lines, [encoder.encode(" a")]);
});

Deno.test("NdjsonDecoderStream: an unterminated last line is emitted", async () => {
  const lines = await decode([encoder.encode("one\ntw"), encoder.encode("o")]);
  assert.deepEqual(lines, [encoder.encode("one"), encoder.encode("two")]);
});

Deno.test("NdjsonDecoderStream: an overlong line errors as soon as it passes the limit", async () => {
  const { readable, writable } = new NdjsonDecoderStream({ maxLineBytes: 100 });
  const writer = writable.getWriter();
  const reader = readable.getReader();
  const reading = reader.read();
  await writer.write(new Uint8Array(60).fill(0x41));
  // No newline yet, but 120 bytes are over the limit: no need to wait for the rest.
  const writing = writer.write(new Uint8Array(60).fill(0x41));
  await assert.rejects(reading, (error) => {
    assert.ok(error instanceof FrameTooLargeError);
    assert.equal(error.size, 120);
    assert.equal(error.limit, 100);
    assert.equal(error.message, "Frame of 120 bytes exceeds maxLineBytes (100)");
    return true;
  });
  await assert.rejects(writing, FrameTooLargeError);
});

Deno.test("NdjsonDecoderStream: an overlong line inside one chunk errors too", async () => {
  await assert.rejects(decode([encoder.encode("ok\n123456\n")], 5), {
    name: "FrameTooLargeError",
    size: 6,
  });
});

Deno.test("NdjsonDecoderStream: a line of exactly maxLineBytes passes, CRLF split anywhere", async () => {
  const bytes = encoder.encode("12345\r\n6789\r\n");
  for (let cut = 0; cut <= bytes.length; cut++) {
    const lines = await decode([bytes.subarray(0, cut), bytes.subarray(cut)], 5);
    assert.deepEqual(lines, [encoder.encode("12345"), encoder.encode("6789")], `cut at ${cut}`);
  }
  for (let cut = 0; cut <= 7; cut++) {
    const long = encoder.encode("123456\r\n");
    await assert.rejects(decode([long.subarray(0, cut), long.subarray(cut)], 5), {
      name: "FrameTooLargeError",
    }, `cut at ${cut}`);
  }
});

Deno.test("NdjsonDecoderStream: maxLineBytes 0 accepts only empty lines", async () => {
  assert.deepEqual(await decode([encoder.encode("\n\r\n")], 0), []);
  await assert.rejects(decode([encoder.encode("x\n")], 0), FrameTooLargeError);
});

Deno.test("NdjsonDecoderStream: an 8 MiB line in 1 KiB chunks is copied once", async () => {
  // A decoder that concatenated its buffer per chunk would copy ~32 GiB here and never finish
  // within the test's time; this one copies the line once.
  const size = 8 * 1024 * 1024;
  const chunk = new Uint8Array(1024).fill(0x61);
  let sent = 0;
  const source = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent === size) {
        controller.enqueue(new Uint8Array([0x0a]));
        controller.close();
        return;
      }
      controller.enqueue(chunk);
      sent += chunk.length;
    },
  });
  const lines = await Array.fromAsync(source.pipeThrough(new NdjsonDecoderStream()));
  assert.equal(lines.length, 1);
  assert.equal(lines[0].length, size);
  assert.equal(lines[0].buffer.byteLength, size, "one buffer of the exact size");
});

Deno.test("NdjsonDecoderStream: random garbage gives lines or FrameTooLargeError", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.uint8Array({ maxLength: 2000 }),
      chunkingArb(),
      fc.integer({ min: 0, max: 300 }),
      async (garbage, rechunk, maxLineBytes) => {
        try {
          const lines = await decode(rechunk(garbage), maxLineBytes);
          for (const line of lines) {
            assert.ok(line.length > 0 && line.length <= maxLineBytes);
            assert.equal(line.indexOf(0x0a), -1);
          }
        } catch (error) {
          assert.ok(error instanceof FrameTooLargeError, `unexpected ${error}`);
        }
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("NdjsonDecoderStream: options out of range are a RangeError", () => {
  assert.equal(DEFAULT_MAX_LINE_BYTES, 16 * 1024 * 1024);
  for (const maxLineBytes of [-1, 0.5, NaN]) {
    assert.throws(() => new NdjsonDecoderStream({ maxLineBytes }), RangeError);
  }
});
