import assert from "node:assert/strict";
import { FrameTooLargeError } from "../errors.ts";
import { concat } from "./_test_util.ts";
import { ContentLengthEncoderStream } from "./content_length_encoder_stream.ts";

const text = new TextEncoder();

async function encode(
  payloads: Uint8Array[],
  options?: ConstructorParameters<typeof ContentLengthEncoderStream>[0],
): Promise<Uint8Array[]> {
  const encoder = new ContentLengthEncoderStream(options);
  const reading = Array.fromAsync(encoder.readable);
  const writer = encoder.writable.getWriter();
  for (const payload of payloads) writer.write(payload);
  await writer.close();
  return await reading;
}

Deno.test("ContentLengthEncoderStream: writes the exact LSP header for every length", async () => {
  const lengths = [0, 1, 9, 10, 99, 100, 12345];
  const payloads = lengths.map((n) => new Uint8Array(n).fill(0x78));
  const chunks = await encode(payloads);
  assert.equal(chunks.length, 1, "written together, packed together");
  const expected = concat(
    payloads.flatMap((p) => [text.encode(`Content-Length: ${p.length}\r\n\r\n`), p]),
  );
  assert.deepEqual(chunks[0], expected);
});

Deno.test("ContentLengthEncoderStream: a large payload passes through uncopied", async () => {
  const large = new Uint8Array(1_000_000);
  const chunks = await encode([text.encode("{}"), large]);
  assert.deepEqual(
    chunks[0],
    text.encode("Content-Length: 2\r\n\r\n{}Content-Length: 1000000\r\n\r\n"),
  );
  assert.equal(chunks[1], large);
  assert.equal(chunks.length, 2);
});

Deno.test("ContentLengthEncoderStream: a payload over maxFrameBytes errors both sides", async () => {
  const encoder = new ContentLengthEncoderStream({ maxFrameBytes: 3 });
  const reading = encoder.readable.getReader().read();
  const writer = encoder.writable.getWriter();
  await assert.rejects(writer.write(new Uint8Array(4)), (error) => {
    assert.ok(error instanceof FrameTooLargeError);
    return error.size === 4 && error.limit === 3;
  });
  await assert.rejects(reading, FrameTooLargeError);
});
