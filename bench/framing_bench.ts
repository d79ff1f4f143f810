// Framing throughput, per payload size (64 B, 1 KiB, 64 KiB, 1 MiB). Each iteration moves a
// batch of frames (about 256 KiB to 4 MiB of payload, see _framing_sizes.ts), so per-iteration set-up is
// noise next to the per-frame cost being measured.
//
//   deno bench -A bench/framing_bench.ts
//
// Groups:
// - "decode <size>": a pre-built buffer of frames, cut into 64 KiB chunks as a socket read
//   would deliver them. Baseline: the synchronous FrameDecoder loop; against it the
//   FrameDecoderStream, and NDJSON / Content-Length decoders over the same payloads.
// - "encode <size>": frames written without awaiting each one (respecting backpressure), until
//   every byte reached a counting sink. Baseline: FrameWriter; against it FrameEncoderStream
//   and the NDJSON / Content-Length encoder streams. Payloads over 64 KiB pass through
//   uncopied, so their "MB/s" counts bytes handed on by reference, not bytes copied.
// - "pipeline <size>": encoder and decoder joined through an in-memory byte stream, frames
//   counted at the far end: FrameWriter + FrameDecoderStream (baseline) against
//   FrameEncoderStream + FrameDecoderStream, and NDJSON at both ends (the JSON-over-stdio
//   classic).

import {
  ContentLengthDecoderStream,
  ContentLengthEncoderStream,
  encodeFrame,
  FrameDecoder,
  FrameDecoderStream,
  FrameEncoderStream,
  FrameWriter,
  NdjsonDecoderStream,
  NdjsonEncoderStream,
} from "../framing/mod.ts";
import { FRAMES } from "./_framing_sizes.ts";

const READ_CHUNK = 64 * 1024;
const text = new TextEncoder();

for (const [label, { size, frames }] of Object.entries(FRAMES)) {
  // Printable bytes without a newline, so the same payload is valid for every framing.
  const payload = new Uint8Array(size).fill(0x61);
  const lengthPrefixed = cut(concat(Array.from({ length: frames }, () => encodeFrame(payload))));
  const lines = cut(
    concat(Array.from({ length: frames }, () => [payload, text.encode("\n")]).flat()),
  );
  const lspHeader = text.encode(`Content-Length: ${size}\r\n\r\n`);
  const lsp = cut(concat(Array.from({ length: frames }, () => [lspHeader, payload]).flat()));

  const decodeGroup = `decode ${label}`;
  Deno.bench({
    name: `frame/decode ${label}`,
    group: decodeGroup,
    baseline: true,
    fn: () => {
      const decoder = new FrameDecoder();
      let count = 0;
      for (const chunk of lengthPrefixed) {
        decoder.push(chunk);
        while (decoder.next() !== undefined) count++;
      }
      decoder.end();
      expect(count, frames);
    },
  });
  Deno.bench({
    name: `frame/decode-stream ${label}`,
    group: decodeGroup,
    fn: async () => {
      expect(await countChunks(from(lengthPrefixed).pipeThrough(new FrameDecoderStream())), frames);
    },
  });
  Deno.bench({
    name: `ndjson/decode-stream ${label}`,
    group: decodeGroup,
    fn: async () => {
      expect(await countChunks(from(lines).pipeThrough(new NdjsonDecoderStream())), frames);
    },
  });
  Deno.bench({
    name: `content-length/decode-stream ${label}`,
    group: decodeGroup,
    fn: async () => {
      expect(await countChunks(from(lsp).pipeThrough(new ContentLengthDecoderStream())), frames);
    },
  });

  const encodeGroup = `encode ${label}`;
  const frameBytes = frames * (size + 4);
  Deno.bench({
    name: `frame/encode-writer ${label}`,
    group: encodeGroup,
    baseline: true,
    fn: async () => {
      const sink = countingSink();
      const writer = new FrameWriter(sink.writable);
      for (let i = 0; i < frames; i++) {
        if (writer.desiredSize <= 0) await writer.ready;
        writer.write(payload);
      }
      await writer.close();
      expect(sink.bytes(), frameBytes);
    },
  });
  Deno.bench({
    name: `frame/encode-stream ${label}`,
    group: encodeGroup,
    fn: async () => {
      expect(await encodeThrough(new FrameEncoderStream(), payload, frames), frameBytes);
    },
  });
  Deno.bench({
    name: `ndjson/encode-stream ${label}`,
    group: encodeGroup,
    fn: async () => {
      expect(await encodeThrough(new NdjsonEncoderStream(), payload, frames), frames * (size + 1));
    },
  });
  Deno.bench({
    name: `content-length/encode-stream ${label}`,
    group: encodeGroup,
    fn: async () => {
      const bytes = await encodeThrough(new ContentLengthEncoderStream(), payload, frames);
      expect(bytes, frames * (size + lspHeader.length));
    },
  });

  const pipelineGroup = `pipeline ${label}`;
  Deno.bench({
    name: `frame/pipeline-writer ${label}`,
    group: pipelineGroup,
    baseline: true,
    fn: async () => {
      const pipe = new TransformStream<Uint8Array, Uint8Array>();
      const counting = countChunks(pipe.readable.pipeThrough(new FrameDecoderStream()));
      const writer = new FrameWriter(pipe.writable);
      for (let i = 0; i < frames; i++) {
        if (writer.desiredSize <= 0) await writer.ready;
        writer.write(payload);
      }
      await writer.close();
      expect(await counting, frames);
    },
  });
  Deno.bench({
    name: `frame/pipeline-stream ${label}`,
    group: pipelineGroup,
    fn: async () => {
      const encoder = new FrameEncoderStream();
      const counting = countChunks(encoder.readable.pipeThrough(new FrameDecoderStream()));
      await writeAll(encoder.writable, payload, frames);
      expect(await counting, frames);
    },
  });
  Deno.bench({
    name: `ndjson/pipeline-stream ${label}`,
    group: pipelineGroup,
    fn: async () => {
      const encoder = new NdjsonEncoderStream();
      const counting = countChunks(encoder.readable.pipeThrough(new NdjsonDecoderStream()));
      await writeAll(encoder.writable, payload, frames);
      expect(await counting, frames);
    },
  });
}

/** Writes `count` payloads without awaiting each write, then closes. */
async function writeAll(
  writable: WritableStream<Uint8Array>,
  payload: Uint8Array,
  count: number,
): Promise<void> {
  const writer = writable.getWriter();
  for (let i = 0; i < count; i++) {
    if (writer.desiredSize! <= 0) await writer.ready;
    writer.write(payload);
  }
  await writer.close();
}

/** Writes through an encoder pair and returns the bytes that came out. */
async function encodeThrough(
  pair: ReadableWritablePair<Uint8Array, Uint8Array>,
  payload: Uint8Array,
  count: number,
): Promise<number> {
  const reading = (async () => {
    let bytes = 0;
    for await (const chunk of pair.readable) bytes += chunk.length;
    return bytes;
  })();
  await writeAll(pair.writable, payload, count);
  return await reading;
}

async function countChunks(readable: ReadableStream<Uint8Array>): Promise<number> {
  let count = 0;
  for await (const _ of readable) count++;
  return count;
}

function countingSink(): { writable: WritableStream<Uint8Array>; bytes: () => number } {
  let bytes = 0;
  const writable = new WritableStream<Uint8Array>({
    write(chunk) {
      bytes += chunk.length;
    },
  });
  return { writable, bytes: () => bytes };
}

function from(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(chunks[i++]);
      else controller.close();
    },
  }, { highWaterMark: 0 });
}

function cut(bytes: Uint8Array): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += READ_CHUNK) chunks.push(bytes.subarray(i, i + READ_CHUNK));
  return chunks;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function expect(actual: number, expected: number): void {
  if (actual !== expected) throw new Error(`expected ${expected}, got ${actual}`);
}
