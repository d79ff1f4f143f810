// Framing throughput, per payload size (64 B, 1 KiB, 64 KiB, 1 MiB). Each iteration moves a
// batch of frames (about 256 KiB to 4 MiB of payload), so per-iteration set-up is noise next to
// the per-frame cost being measured.
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

type Pair = ReadableWritablePair<Uint8Array, Uint8Array>;

const READ_CHUNK = 64 * 1024;
const text = new TextEncoder();
/** Payload size and frames per iteration, by label. */
const SIZES = {
  "64B": [64, 4096],
  "1KiB": [1024, 1024],
  "64KiB": [65536, 32],
  "1MiB": [1 << 20, 4],
};

for (const [label, [size, frames]] of Object.entries(SIZES)) {
  // Printable bytes without a newline, so the same payload is valid for every framing.
  const payload = new Uint8Array(size).fill(0x61);
  const lspHeader = text.encode(`Content-Length: ${size}\r\n\r\n`);
  /** `frames` times `parts`, cut into read-sized chunks. */
  const input = (parts: Uint8Array[]) => {
    const bytes = new Uint8Array(frames * parts.reduce((sum, part) => sum + part.length, 0));
    let at = 0;
    for (let i = 0; i < frames; i++) {
      for (const part of parts) bytes.set(part, (at += part.length) - part.length);
    }
    return Array.from(
      { length: Math.ceil(bytes.length / READ_CHUNK) },
      (_, i) => bytes.subarray(i * READ_CHUNK, (i + 1) * READ_CHUNK),
    );
  };
  const lengthPrefixed = input([encodeFrame(payload)]);
  const bench = (group: string, name: string, fn: () => void | Promise<void>, baseline = false) =>
    Deno.bench({ name: `${name} ${label}`, group: `${group} ${label}`, baseline, fn });
  const decode = (chunks: Uint8Array[], decoder: () => Pair) => async () => {
    expect(await countChunks(from(chunks).pipeThrough(decoder())), frames);
  };
  const encode = (encoder: () => Pair, frameBytes: number) => async () => {
    const pair = encoder();
    let bytes = 0;
    const reading = (async () => {
      for await (const chunk of pair.readable) bytes += chunk.length;
    })();
    await writeAll(pair.writable.getWriter(), payload, frames);
    await reading;
    expect(bytes, frames * frameBytes);
  };
  const pipeline = (encoder: () => Pair, decoder: () => Pair) => async () => {
    const pair = encoder();
    const counting = countChunks(pair.readable.pipeThrough(decoder()));
    await writeAll(pair.writable.getWriter(), payload, frames);
    expect(await counting, frames);
  };

  bench("decode", "frame/decode", () => {
    const decoder = new FrameDecoder();
    let count = 0;
    for (const chunk of lengthPrefixed) {
      decoder.push(chunk);
      while (decoder.next() !== undefined) count++;
    }
    decoder.end();
    expect(count, frames);
  }, true);
  bench("decode", "frame/decode-stream", decode(lengthPrefixed, () => new FrameDecoderStream()));
  const lines = input([payload, text.encode("\n")]);
  bench("decode", "ndjson/decode-stream", decode(lines, () => new NdjsonDecoderStream()));
  const lsp = input([lspHeader, payload]);
  bench(
    "decode",
    "content-length/decode-stream",
    decode(lsp, () => new ContentLengthDecoderStream()),
  );

  bench("encode", "frame/encode-writer", async () => {
    let bytes = 0;
    const sink = new WritableStream<Uint8Array>({ write: (chunk) => void (bytes += chunk.length) });
    await writeAll(new FrameWriter(sink), payload, frames);
    expect(bytes, frames * (size + 4));
  }, true);
  bench("encode", "frame/encode-stream", encode(() => new FrameEncoderStream(), size + 4));
  bench("encode", "ndjson/encode-stream", encode(() => new NdjsonEncoderStream(), size + 1));
  const lspBytes = size + lspHeader.length;
  bench(
    "encode",
    "content-length/encode-stream",
    encode(() => new ContentLengthEncoderStream(), lspBytes),
  );

  bench("pipeline", "frame/pipeline-writer", async () => {
    const pipe = new TransformStream<Uint8Array, Uint8Array>();
    const counting = countChunks(pipe.readable.pipeThrough(new FrameDecoderStream()));
    await writeAll(new FrameWriter(pipe.writable), payload, frames);
    expect(await counting, frames);
  }, true);
  const frame = pipeline(() => new FrameEncoderStream(), () => new FrameDecoderStream());
  bench("pipeline", "frame/pipeline-stream", frame);
  const ndjson = pipeline(() => new NdjsonEncoderStream(), () => new NdjsonDecoderStream());
  bench("pipeline", "ndjson/pipeline-stream", ndjson);
}

/** Writes `count` payloads without awaiting each write (respecting backpressure), then closes. */
async function writeAll(
  writer: {
    desiredSize: number | null;
    ready: Promise<unknown>;
    write(chunk: Uint8Array): unknown;
    close(): Promise<void>;
  },
  payload: Uint8Array,
  count: number,
): Promise<void> {
  for (let i = 0; i < count; i++) {
    if (writer.desiredSize! <= 0) await writer.ready;
    writer.write(payload);
  }
  await writer.close();
}

async function countChunks(readable: ReadableStream<Uint8Array>): Promise<number> {
  let count = 0;
  for await (const _ of readable) count++;
  return count;
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

function expect(actual: number, expected: number): void {
  if (actual !== expected) throw new Error(`expected ${expected}, got ${actual}`);
}
