// What a hostile peer can do to the framings with the bytes it sends, and what the writers do
// with what they are given.

import assert from "node:assert/strict";
import fc from "fast-check";
import { FrameSyntaxError, FramingError, TruncatedFrameError } from "../errors.ts";
import { ContentLengthDecoder } from "./_content_length_decoder.ts";
import type { FrameSink } from "./_frame_sink.ts";
import { LineSplitter } from "./_line_splitter.ts";
import { QueueSplitter } from "./_queue_splitter.ts";
import { chunkingArb, concat, payloadArb } from "./_test_util.ts";
import { FrameDecoder } from "./frame_decoder.ts";
import { type FrameTarget, FrameWriter } from "./frame_writer.ts";
import { NdjsonDecoderStream } from "./ndjson_decoder_stream.ts";

const text = new TextEncoder();

/** A sink that keeps copies of what it is given. */
function recorder(): FrameSink & { frames: Uint8Array[] } {
  const frames: Uint8Array[] = [];
  return { frames, enqueue: (frame) => void frames.push(frame.slice()) };
}

Deno.test("framing hostile: an NDJSON line trickled a byte per read holds memory in proportion to its length", () => {
  // Each read of a trickling peer is a chunk of its own. A splitter that kept a view of every
  // piece held a couple of hundred bytes of heap per byte of the line: a line just under a
  // 16 MiB maxLineBytes would have held gigabytes.
  const bytes = 1_000_000;
  const splitter = new LineSplitter(16 * 1024 * 1024);
  const sink = recorder();
  const before = Deno.memoryUsage().heapUsed;
  for (let i = 0; i < bytes; i++) splitter.push(new Uint8Array([0x61 + (i % 26)]), sink);
  const held = Deno.memoryUsage().heapUsed - before;
  assert.ok(held < 32 * bytes, `${(held / bytes).toFixed(1)} bytes of heap per byte of line`);
  splitter.push(new Uint8Array([0x0a]), sink);
  assert.equal(sink.frames.length, 1);
  const line = sink.frames[0];
  assert.equal(line.length, bytes);
  for (let i = 0; i < bytes; i += 9973) assert.equal(line[i], 0x61 + (i % 26));
});

Deno.test("framing hostile: NDJSON lines pieced from small and large reads, split anywhere, decode the same", async () => {
  // Pieces on both sides of the size at which a pending line copies a piece rather than
  // keeping a view of it, `\r\n` and `\r` on the boundaries, limits near the line lengths.
  const piece = fc.oneof(
    fc.constantFrom("\n", "\r\n", "\r", "\n\n"),
    fc.integer({ min: 1, max: 1500 }).map((n) => "x".repeat(n)),
    fc.integer({ min: 1, max: 40 }).map((n) => "ab".repeat(n)),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.array(piece, { maxLength: 30 }),
      chunkingArb(),
      fc.integer({ min: 0, max: 12_000 }),
      async (pieces, chunking, maxLineBytes) => {
        const bytes = text.encode(pieces.join(""));
        const run = (chunks: Uint8Array[]): string => {
          const splitter = new LineSplitter(maxLineBytes);
          const sink = recorder();
          let outcome = "end";
          try {
            for (const chunk of chunks) splitter.push(chunk, sink);
            splitter.end(sink);
          } catch (error) {
            outcome = (error as Error).name;
          }
          return `${sink.frames.map((f) => new TextDecoder().decode(f)).join("|")} ${outcome}`;
        };
        assert.equal(run(chunking(bytes)), run([bytes]));
        // The stream agrees with the splitter.
        const lines = await Array.fromAsync(
          ReadableStream.from(chunking(bytes)).pipeThrough(
            new NdjsonDecoderStream({ maxLineBytes }),
          ),
        ).catch(() => undefined);
        if (lines !== undefined) {
          assert.equal(
            lines.map((f) => new TextDecoder().decode(f)).join("|") + " end",
            run([bytes]),
          );
        }
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("framing hostile: a Content-Length header ending its lines in a bare \\n is refused at once", () => {
  // A peer that ends its header lines in "\n" alone waits for an answer; a decoder that waited
  // for "\r\n\r\n" waited with it until maxHeaderBytes of later messages or the end of input.
  for (
    const input of [
      "Content-Length: 2\n\n{}",
      "Content-Length: 2\r\n\n{}",
      "Content-Length: 2\nContent-Type: x\r\n\r\n{}",
      "Content-Type: x\n",
      "\n",
      "Content-Length: 2\r\n\r\n{}\nContent-Length: 2\r\n\r\n{}",
    ]
  ) {
    const bytes = text.encode(input);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const decoder = new ContentLengthDecoder();
      const sink = recorder();
      assert.throws(
        () => {
          decoder.push(bytes.subarray(0, cut), sink);
          decoder.push(bytes.subarray(cut), sink);
        },
        (error) => error instanceof FrameSyntaxError && /bare "\\n"/.test(error.message),
        `${JSON.stringify(input)} cut at ${cut}`,
      );
    }
  }
});

Deno.test("framing hostile: frames before malformed bytes in the same read come out before the error", () => {
  // Over the synchronous splitter the channel reads JSON-RPC with, the messages a read holds
  // before the peer's malformed bytes are delivered, then the error: as with conduit's own
  // frames, whether they are does not depend on where the reads split the bytes.
  const cases: [() => ConstructorParameters<typeof QueueSplitter>[0], string, string][] = [
    [
      () => new ContentLengthDecoder(),
      "Content-Length: 2\r\n\r\n{}Content-Length: 1\r\n\r\n1Content-Length: x\r\n\r\n",
      "FrameSyntaxError",
    ],
    [
      () => new ContentLengthDecoder({ maxFrameBytes: 8 }),
      "Content-Length: 2\r\n\r\n{}Content-Length: 9\r\n\r\n",
      "FrameTooLargeError",
    ],
    [
      () => new LineSplitter(4, "maxFrameBytes"),
      "{}\n[1]\r\n12345\n",
      "FrameTooLargeError",
    ],
  ];
  for (const [decoder, input, name] of cases) {
    const bytes = text.encode(input);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const splitter = new QueueSplitter(decoder());
      const frames: string[] = [];
      let error: unknown;
      try {
        for (const chunk of [bytes.subarray(0, cut), bytes.subarray(cut)]) {
          splitter.push(chunk);
          for (let f = splitter.next(); f !== undefined; f = splitter.next()) {
            frames.push(new TextDecoder().decode(f));
          }
        }
        splitter.end();
      } catch (caught) {
        error = caught;
      }
      const whole = input.startsWith("{}\n")
        ? ["{}", "[1]"]
        : input.includes("1\r\n\r\n1")
        ? ["{}", "1"]
        : ["{}"];
      assert.deepEqual(frames, whole, `${JSON.stringify(input)} cut at ${cut}`);
      assert.equal((error as Error | undefined)?.name, name);
      // It stays failed.
      assert.throws(() => splitter.next(), { name });
      assert.throws(() => splitter.push(new Uint8Array(1)), { name });
    }
  }
});

type Framing = "length-prefixed" | "ndjson" | "content-length";

/** The decoder of `framing`, as the channel drives one: push a chunk, take frames. */
function splitterFor(framing: Framing): {
  push(chunk: Uint8Array): void;
  next(): Uint8Array | undefined;
  end(): void;
} {
  if (framing === "length-prefixed") return new FrameDecoder({ maxFrameBytes: 1 << 20 });
  return new QueueSplitter(
    framing === "ndjson" ? new LineSplitter(1 << 20) : new ContentLengthDecoder(),
  );
}

Deno.test("framing hostile: every framing round-trips through FrameWriter, re-chunked at random, and a cut inside a frame is a TruncatedFrameError", async () => {
  const write = fc.record({
    head: fc.uint8Array({ maxLength: 20 }),
    body: fc.oneof(
      payloadArb(),
      fc.integer({ min: 60, max: 700 }).map((n) => new Uint8Array(n).fill(n & 0x7f)),
    ),
    parts: fc.boolean(),
  });
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom<Framing>("length-prefixed", "ndjson", "content-length"),
      fc.array(fc.array(write, { maxLength: 12 }), { maxLength: 5 }),
      fc.integer({ min: 64, max: 600 }),
      fc.boolean(),
      chunkingArb(),
      async (framing, bursts, maxBatchBytes, reuseChunks, chunking) => {
        const written: Uint8Array[] = [];
        const target: FrameTarget = {
          // A copy: with reuseChunks the writer reuses a chunk's memory once it is written.
          writeChunk: (chunk) => void written.push(chunk.slice()),
          closeWrite: () => Promise.resolve(),
          abort: () => Promise.resolve(),
        };
        const writer = new FrameWriter(target, { framing, maxBatchBytes, reuseChunks });
        const expected: Uint8Array[] = [];
        for (const burst of bursts) {
          for (let { head, body, parts } of burst) {
            if (framing === "ndjson") {
              // A line holds no "\n", and its decoder drops a trailing "\r" and empty lines.
              head = head.map((b) => b === 0x0a || b === 0x0d ? 0x20 : b);
              body = body.map((b) => b === 0x0a || b === 0x0d ? 0x20 : b);
              if (head.length + body.length === 0) body = new Uint8Array([0x7b]);
            }
            const payload = concat([head, body]);
            expected.push(payload);
            if (parts) writer.writeParts(head, body);
            else writer.write(payload);
          }
          await writer.ready;
        }
        await writer.close();
        const bytes = concat(written);

        const decoder = splitterFor(framing);
        const frames: Uint8Array[] = [];
        for (const chunk of chunking(bytes)) {
          decoder.push(chunk);
          for (let f = decoder.next(); f !== undefined; f = decoder.next()) frames.push(f.slice());
        }
        decoder.end();
        assert.deepEqual(frames, expected);

        // One byte short ends inside the last frame (or its header). NDJSON cannot tell: its
        // cut last line comes out, as the stream's decoder documents.
        if (framing === "ndjson" || expected.length === 0) return;
        const cut = bytes.length - 1;
        const truncated = splitterFor(framing);
        let error: unknown;
        try {
          for (const chunk of chunking(bytes.subarray(0, cut))) {
            truncated.push(chunk);
            while (truncated.next() !== undefined);
          }
          truncated.end();
        } catch (caught) {
          error = caught;
        }
        assert.ok(error instanceof TruncatedFrameError, `cut at ${cut} of ${bytes.length}`);
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("framing hostile: a conduit frame announced large and trickled a byte per read is assembled in linear time and one buffer", () => {
  const size = 200_000;
  const payload = new Uint8Array(size).map((_, i) => i * 7);
  const bytes = concat([
    new Uint8Array([0, size >>> 16, (size >>> 8) & 0xff, size & 0xff]),
    payload,
  ]);
  const decoder = new FrameDecoder({ maxFrameBytes: size });
  let frame: Uint8Array | undefined;
  for (let i = 0; i < bytes.length; i++) {
    decoder.push(bytes.subarray(i, i + 1));
    frame = decoder.next() ?? frame;
  }
  decoder.end();
  assert.equal(decoder.buffersAllocated, 1);
  assert.equal(decoder.bytesCopied, size);
  assert.deepEqual(frame, payload);
  // One byte short is a TruncatedFrameError naming the missing byte, as is a cut header.
  for (const cut of [1, 3, bytes.length - 1]) {
    const short = new FrameDecoder({ maxFrameBytes: size });
    for (let i = 0; i < cut; i++) {
      short.push(bytes.subarray(i, i + 1));
      assert.equal(short.next(), undefined);
    }
    assert.throws(() => short.end(), (error) => error instanceof TruncatedFrameError);
  }
  // One byte over the limit is refused from the header, before any payload.
  const strict = new FrameDecoder({ maxFrameBytes: size - 1 });
  strict.push(bytes.subarray(0, 4));
  assert.throws(() => strict.next(), (error) => error instanceof FramingError);
});

Deno.test("framing hostile: a header announcing a large frame allocates in proportion to the bytes that came", () => {
  // Each decoder is one connection whose peer sent a header for 64 MiB and one byte: a buffer
  // of the announced size per header made 5 bytes cost 64 MiB of external memory and the
  // collections that memory sets off.
  const size = 64 * 1024 * 1024;
  const header = [size >>> 24, (size >>> 16) & 0xff, (size >>> 8) & 0xff, size & 0xff];
  const lengthPrefixed = new Uint8Array([...header, 1]);
  const contentLength = text.encode(`Content-Length: ${size}\r\n\r\n{`);
  const before = Deno.memoryUsage().external;
  const held: unknown[] = [];
  for (let i = 0; i < 20; i++) {
    const decoder = new FrameDecoder();
    decoder.push(lengthPrefixed);
    assert.equal(decoder.next(), undefined);
    assert.equal(decoder.pendingBytes, size - 1);
    const splitter = new ContentLengthDecoder();
    splitter.push(contentLength, recorder());
    held.push(decoder, splitter);
  }
  const grown = Deno.memoryUsage().external - before;
  assert.ok(grown < 128 * 1024 * 1024, `${(grown / 2 ** 20).toFixed(0)} MiB for 40 headers`);
  assert.equal(held.length, 40);
});

Deno.test("framing hostile: a large frame whose buffer grows as it arrives decodes byte for byte, read into or copied", async () => {
  const size = 9 * 1024 * 1024 + 7;
  const payload = new Uint8Array(size).map((_, i) => (i * 31) >>> 3);
  const bytes = concat([
    new Uint8Array([size >>> 24, (size >>> 16) & 0xff, (size >>> 8) & 0xff, size & 0xff]),
    payload,
  ]);
  // Copied from ordinary chunks of 1 MiB less one byte.
  const copied = new FrameDecoder();
  let frame: Uint8Array | undefined;
  for (let i = 0; i < bytes.length; i += 1024 * 1024 - 1) {
    copied.push(bytes.subarray(i, i + 1024 * 1024 - 1));
    frame = copied.next() ?? frame;
  }
  copied.end();
  assert.deepEqual(frame, payload);
  assert.equal(copied.buffersAllocated, 1);
  // Read straight into the targets the decoder offers, each read short of the target.
  const direct = new FrameDecoder();
  let sent = 0;
  const reads: number[] = [];
  direct.push(bytes.subarray(0, 1000));
  sent = 1000;
  frame = direct.next();
  while (frame === undefined) {
    const target = direct.readTarget();
    assert.ok(target !== undefined);
    reads.push(target.length);
    const n = Math.min(target.length, 3 * 1024 * 1024 + 5, bytes.length - sent);
    target.set(bytes.subarray(sent, sent + n));
    sent += n;
    direct.push(target.subarray(0, n));
    frame = direct.next();
  }
  assert.equal(sent, bytes.length);
  assert.deepEqual(frame, payload);
  assert.ok(reads[0] < size - 1000, `the first target was ${reads[0]} bytes`);
  // The assembled frame's buffer is its own and exactly its size: recycle() takes it back.
  assert.equal(frame.buffer.byteLength, size);
  assert.equal(direct.recycle(frame), true);
  // Content-Length bodies grow the same way.
  const body = text.encode(JSON.stringify({ data: "x".repeat(5 * 1024 * 1024) }));
  const message = concat([text.encode(`Content-Length: ${body.length}\r\n\r\n`), body]);
  const splitter = new ContentLengthDecoder();
  const sink = recorder();
  for (let i = 0; i < message.length; i += 65_536) {
    splitter.push(message.subarray(i, i + 65_536), sink);
  }
  splitter.end();
  assert.equal(sink.frames.length, 1);
  assert.deepEqual(sink.frames[0], body);
  await Promise.resolve();
});
