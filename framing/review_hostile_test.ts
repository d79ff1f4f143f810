// Reviews of the day's framing fixes (a large frame's buffer grown as its bytes arrive): what
// they missed.

import assert from "node:assert/strict";
import { encodeFrame, FrameDecoder, FrameReader } from "./mod.ts";
import { fillOrSwap } from "../transfer.ts";

Deno.test("review hostile: a split frame's rest over 4 MiB still takes a thread's transferred body whole", () => {
  // A thread transport (fillOrSwap) moves a transferred body into the read target instead of
  // copying it when the target is the whole of the rest's buffer: FrameDecoderSplitOptions
  // says so. A rest over 4 MiB got a 2 MiB first buffer, so it was copied (and copied again
  // as the buffer grew).
  const rest = 5 * 1024 * 1024;
  const decoder = new FrameDecoder({ splitHead: (start) => start.length === 0 ? undefined : 1 });
  const payload = new Uint8Array(1 + rest).fill(3);
  const bytes = encodeFrame(payload);
  decoder.push(bytes.subarray(0, 5)); // the header and the 1-byte head
  assert.equal(decoder.next(), undefined);
  const target = decoder.readTarget(true)!; // as FrameReader asks over a thread transport
  const body = bytes.slice(5); // the body as a thread receives it: a buffer of its own
  const { read, rest: left } = fillOrSwap(target, body);
  assert.ok(left === undefined, `the body was not taken whole: ${left?.length} bytes left`);
  decoder.push(read);
  assert.deepEqual(decoder.next(), new Uint8Array([3]));
  assert.ok(decoder.tail?.buffer === body.buffer, "the rest is not the body moved");
  assert.equal(decoder.bytesCopied, 1);
});

Deno.test("review hostile: FrameReader asks for the whole buffer over a source whose readInto moves", async () => {
  const rest = 5 * 1024 * 1024;
  const bytes = encodeFrame(new Uint8Array(1 + rest).fill(4));
  // As a thread transport receives them: the header and head, then the body in a buffer of its own.
  const chunks: Uint8Array[] = [bytes.slice(0, 5), bytes.slice(5)];
  const source = {
    readable: new ReadableStream<Uint8Array>(),
    readIntoMoves: true,
    readChunk: () => Promise.resolve(chunks.shift() ?? null),
    readInto: (view: Uint8Array) => {
      const chunk = chunks.shift();
      if (chunk === undefined) return Promise.resolve(null);
      const { read, rest: left } = fillOrSwap(view, chunk);
      if (left !== undefined) chunks.unshift(left);
      return Promise.resolve(read);
    },
  };
  const decoder = new FrameDecoder({ splitHead: (start) => start.length === 0 ? undefined : 1 });
  const reader = new FrameReader(source, decoder);
  let head: Uint8Array | undefined;
  while (head === undefined) {
    const chunk = await reader.readBytes();
    assert.ok(chunk !== null, "the frame never came whole");
    decoder.push(chunk);
    head = decoder.next();
  }
  assert.equal(decoder.tail?.length, rest);
  assert.equal(decoder.bytesCopied, 1, "only the head was copied");
});
