import assert from "node:assert/strict";
import fc from "fast-check";
import { FrameSyntaxError, FrameTooLargeError } from "../errors.ts";
import { concat } from "./_test_util.ts";
import { NdjsonDecoderStream } from "./ndjson_decoder_stream.ts";
import { NdjsonEncoderStream } from "./ndjson_encoder_stream.ts";

const text = new TextEncoder();

async function encode(payloads: Uint8Array[], maxBatchBytes?: number): Promise<Uint8Array[]> {
  const encoder = new NdjsonEncoderStream({ maxBatchBytes });
  const reading = Array.fromAsync(encoder.readable);
  const writer = encoder.writable.getWriter();
  for (const payload of payloads) writer.write(payload);
  await writer.close();
  return await reading;
}

Deno.test("NdjsonEncoderStream: any JSON values round-trip through the line decoder", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.jsonValue(), { maxLength: 30 }),
      fc.integer({ min: 64, max: 4096 }),
      async (values, maxBatchBytes) => {
        const chunks = await encode(
          values.map((v) => text.encode(JSON.stringify(v))),
          maxBatchBytes,
        );
        for (const chunk of chunks) assert.ok(chunk.length <= maxBatchBytes || chunk[0] !== 0x0a);
        const lines = await Array.fromAsync(
          ReadableStream.from(chunks).pipeThrough(new NdjsonDecoderStream()),
        );
        const decoded = lines.map((line) => JSON.parse(new TextDecoder().decode(line)));
        // JSON.stringify turns -0 into 0; compare what JSON can carry.
        assert.deepEqual(decoded, values.map((v) => JSON.parse(JSON.stringify(v))));
      },
    ),
    { numRuns: 150 },
  );
});

Deno.test("NdjsonEncoderStream: lines written together share one chunk", async () => {
  const payloads = Array.from({ length: 100 }, (_, i) => text.encode(`{"i":${i}}`));
  const chunks = await encode(payloads);
  assert.equal(chunks.length, 1);
  assert.deepEqual(chunks[0], concat(payloads.flatMap((p) => [p, text.encode("\n")])));
});

Deno.test("NdjsonEncoderStream: a long line passes uncopied; its newline starts the next chunk", async () => {
  const long = new Uint8Array(100_000).fill(0x61);
  const chunks = await encode([text.encode("a"), long, text.encode("b")]);
  assert.deepEqual(chunks[0], text.encode("a\n"));
  assert.equal(chunks[1], long, "the very payload written");
  assert.equal(chunks[2][0], 0x0a);
  assert.deepEqual(concat(chunks.slice(2)), text.encode("\nb\n"));
});

Deno.test("NdjsonEncoderStream: a payload holding a newline errors both sides", async () => {
  const encoder = new NdjsonEncoderStream();
  const reading = Array.fromAsync(encoder.readable);
  const writer = encoder.writable.getWriter();
  await assert.rejects(writer.write(text.encode('{"a":\n1}')), (error) => {
    assert.ok(error instanceof FrameSyntaxError);
    assert.match(error.message, /newline at byte 5 of 8/);
    return true;
  });
  await assert.rejects(reading, FrameSyntaxError);
});

Deno.test("NdjsonEncoderStream: a payload over maxLineBytes is refused, naming the option", async () => {
  const encoder = new NdjsonEncoderStream({ maxLineBytes: 10 });
  const writer = encoder.writable.getWriter();
  await assert.rejects(writer.write(new Uint8Array(11)), (error) => {
    assert.ok(error instanceof FrameTooLargeError);
    assert.equal(error.message, "Frame of 11 bytes exceeds maxLineBytes (10)");
    return true;
  });
  await assert.rejects(encoder.readable.getReader().read(), FrameTooLargeError);
});

Deno.test("NdjsonEncoderStream: options out of range are a RangeError", () => {
  assert.throws(() => new NdjsonEncoderStream({ maxLineBytes: -1 }), /maxLineBytes/);
  assert.throws(() => new NdjsonEncoderStream({ maxBatchBytes: 1 }), RangeError);
});
