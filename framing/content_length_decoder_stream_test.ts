import assert from "node:assert/strict";
import fc from "fast-check";
import {
  FrameSyntaxError,
  FrameTooLargeError,
  FramingError,
  TruncatedFrameError,
} from "../errors.ts";
import { chunkingArb, concat, payloadArb } from "./_test_util.ts";
import { ContentLengthDecoderStream } from "./content_length_decoder_stream.ts";
import { ContentLengthEncoderStream } from "./content_length_encoder_stream.ts";

const text = new TextEncoder();

function frame(body: Uint8Array, extraHeaders = ""): Uint8Array {
  return concat([text.encode(`${extraHeaders}Content-Length: ${body.length}\r\n\r\n`), body]);
}

function decode(
  chunks: Uint8Array[],
  options?: ConstructorParameters<typeof ContentLengthDecoderStream>[0],
): Promise<Uint8Array[]> {
  return Array.fromAsync(
    ReadableStream.from(chunks).pipeThrough(new ContentLengthDecoderStream(options)),
  );
}

const headerArb = fc.constantFrom(
  "",
  "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n",
  "X-Other:value\r\n",
);

Deno.test("ContentLengthDecoderStream: any frames, any headers, re-chunked at random", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(payloadArb(), headerArb), { maxLength: 20 }),
      chunkingArb(),
      async (frames, rechunk) => {
        const bytes = concat(frames.map(([body, headers]) => frame(body, headers)));
        const decoded = await decode(rechunk(bytes));
        assert.deepEqual(decoded.map((f) => f.slice()), frames.map(([body]) => body));
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("ContentLengthDecoderStream: round-trips through ContentLengthEncoderStream", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(payloadArb(), { maxLength: 30 }), async (payloads) => {
      const decoded = await Array.fromAsync(
        ReadableStream.from(payloads)
          .pipeThrough(new ContentLengthEncoderStream({ maxBatchBytes: 256 }))
          .pipeThrough(new ContentLengthDecoderStream()),
      );
      assert.deepEqual(decoded.map((f) => f.slice()), payloads);
    }),
    { numRuns: 100 },
  );
});

Deno.test("ContentLengthDecoderStream: header names are case-insensitive, spaces optional", async () => {
  const bytes = text.encode("content-LENGTH:3\r\n\r\nabcCONTENT-LENGTH:   0  \r\n\r\n");
  assert.deepEqual(await decode([bytes]), [text.encode("abc"), new Uint8Array(0)]);
});

Deno.test("ContentLengthDecoderStream: a body inside one chunk is a view of it", async () => {
  const chunk = concat([frame(text.encode("{}")), frame(text.encode("[1]"))]);
  const frames = await decode([chunk]);
  for (const f of frames) assert.equal(f.buffer, chunk.buffer);
});

Deno.test("ContentLengthDecoderStream: malformed header sections are FrameSyntaxError", async () => {
  const cases: Array<[string, RegExp]> = [
    ["Content-Length 3\r\n\r\nabc", /Malformed header line "Content-Length 3"/],
    [": 3\r\n\r\nabc", /Malformed header line/],
    ["Content-Length: -3\r\n\r\n", /Invalid Content-Length "-3"/],
    ["Content-Length: 3x\r\n\r\nabc", /Invalid Content-Length "3x"/],
    ["Content-Length: \r\n\r\n", /Invalid Content-Length ""/],
    ["Content-Length: 1234567890123456\r\n\r\n", /Invalid Content-Length/],
    ["Content-Length: 1\r\nContent-Length: 1\r\n\r\na", /given twice/],
    ["Content-Type: json\r\n\r\n{}", /without Content-Length/],
    ["\r\n\r\n", /without Content-Length/],
    ["Content\rLength: 1\r\n\r\nx", /without Content-Length/],
    ["Content-Length: 1\n\nx\r\n\r\n", /Invalid Content-Length/],
  ];
  for (const [input, message] of cases) {
    await assert.rejects(decode([text.encode(input)]), (error) => {
      assert.ok(error instanceof FrameSyntaxError, `${JSON.stringify(input)}: ${error}`);
      assert.match(error.message, message);
      return true;
    });
  }
});

Deno.test("ContentLengthDecoderStream: the header section is bounded by maxHeaderBytes", async () => {
  const endless = text.encode("X-Padding: " + "a".repeat(100));
  await assert.rejects(decode([endless, endless], { maxHeaderBytes: 150 }), {
    name: "FrameSyntaxError",
    message: /exceeds maxHeaderBytes \(150\)/,
  });
  // A section of exactly maxHeaderBytes, blank line included, is fine.
  const exact = frame(text.encode("x"));
  assert.deepEqual(await decode([exact], { maxHeaderBytes: exact.length - 1 }), [
    text.encode("x"),
  ]);
});

Deno.test("ContentLengthDecoderStream: an oversize Content-Length errors before the body", async () => {
  const { readable, writable } = new ContentLengthDecoderStream({ maxFrameBytes: 1000 });
  const writer = writable.getWriter();
  const reading = readable.getReader().read();
  const writing = writer.write(text.encode("Content-Length: 4000000000\r\n\r\n"));
  await assert.rejects(reading, (error) => {
    assert.ok(error instanceof FrameTooLargeError);
    assert.equal(error.size, 4_000_000_000);
    assert.equal(error.limit, 1000);
    return true;
  });
  await assert.rejects(writing, FrameTooLargeError);
});

Deno.test("ContentLengthDecoderStream: ending mid-frame names the missing byte count", async () => {
  const bytes = frame(text.encode("0123456789"));
  const headerLength = bytes.length - 10;
  const cases: Array<[number, number]> = [
    [5, 4],
    [headerLength - 1, 1],
    [headerLength - 2, 2],
    [headerLength - 3, 3],
    [headerLength, 10],
    [headerLength + 3, 7],
  ];
  for (const [cut, missing] of cases) {
    await assert.rejects(decode([bytes.subarray(0, cut)]), (error) => {
      assert.ok(error instanceof TruncatedFrameError, `cut at ${cut}: ${error}`);
      assert.equal(error.missing, missing, `cut at ${cut}`);
      return true;
    });
  }
});

Deno.test("ContentLengthDecoderStream: random garbage ends or errors with a FramingError", async () => {
  const prefix = fc.constantFrom("", "Content-Length: ", "Content-Length: 5\r\n", "A: b\r\n");
  await fc.assert(
    fc.asyncProperty(
      prefix,
      fc.uint8Array({ maxLength: 500 }),
      chunkingArb(),
      async (start, garbage, rechunk) => {
        try {
          await decode(rechunk(concat([text.encode(start), garbage])), { maxHeaderBytes: 64 });
        } catch (error) {
          assert.ok(error instanceof FramingError, `unexpected ${error}`);
        }
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("ContentLengthDecoderStream: options out of range are a RangeError", () => {
  assert.throws(() => new ContentLengthDecoderStream({ maxFrameBytes: -1 }), RangeError);
  assert.throws(() => new ContentLengthDecoderStream({ maxHeaderBytes: 3 }), RangeError);
});
