import assert from "node:assert/strict";
import fc from "fast-check";
import {
  FrameSyntaxError,
  FrameTooLargeError,
  FramingError,
  TruncatedFrameError,
} from "../errors.ts";
import { memoryPair } from "../transports/memory.ts";
import type { Transport } from "../transports/types.ts";
import { unix } from "../transports/_test_pairs.ts";
import { chunkingArb, concat, payloadArb, thrown } from "./_test_util.ts";
import {
  DEFAULT_MAX_FRAME_BYTES,
  encodeFrame,
  FrameDecoder,
  FrameReader,
  type FrameSource,
} from "./frame_decoder.ts";
import { FrameWriter } from "./frame_writer.ts";

/** Pushes every chunk, draining between them, and returns every frame (copied). */
function decodeAll(decoder: FrameDecoder, chunks: Iterable<Uint8Array>): Uint8Array[] {
  const frames: Uint8Array[] = [];
  for (const chunk of chunks) {
    decoder.push(chunk);
    for (let frame = decoder.next(); frame !== undefined; frame = decoder.next()) {
      frames.push(frame.slice());
    }
  }
  decoder.end();
  return frames;
}

Deno.test("FrameDecoder: any frames, re-chunked at random, decode to the same frames", () => {
  fc.assert(
    fc.property(fc.array(payloadArb(), { maxLength: 30 }), chunkingArb(), (frames, rechunk) => {
      const bytes = concat(frames.map(encodeFrame));
      const decoder = new FrameDecoder();
      assert.deepEqual(decodeAll(decoder, rechunk(bytes)), frames);
      assert.equal(decoder.midFrame, false);
    }),
    { numRuns: 300 },
  );
});

Deno.test("FrameDecoder: frames larger than 64 KiB survive random chunking", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(payloadArb(), fc.integer({ min: 65_536, max: 200_000 }).map((n) => fill(n))),
        { minLength: 1, maxLength: 5 },
      ),
      fc.array(fc.integer({ min: 1, max: 70_000 }), { minLength: 1, maxLength: 20 }),
      (frames, sizes) => {
        const bytes = concat(frames.map(encodeFrame));
        const chunks: Uint8Array[] = [];
        for (let i = 0, k = 0; i < bytes.length; i += sizes[k++ % sizes.length]) {
          chunks.push(bytes.subarray(i, i + sizes[k % sizes.length]));
        }
        assert.deepEqual(decodeAll(new FrameDecoder(), chunks), frames);
      },
    ),
    { numRuns: 30 },
  );
});

Deno.test("FrameDecoder: a header split at every offset, zero-length frames included", () => {
  const frames = [new Uint8Array(0), new Uint8Array([1, 2, 3]), new Uint8Array(0), fill(300)];
  const bytes = concat(frames.map(encodeFrame));
  for (let a = 0; a <= bytes.length; a++) {
    for (let b = a; b <= Math.min(bytes.length, a + 9); b++) {
      const chunks = [bytes.subarray(0, a), bytes.subarray(a, b), bytes.subarray(b)];
      assert.deepEqual(decodeAll(new FrameDecoder(), chunks), frames, `cuts at ${a}, ${b}`);
    }
  }
});

Deno.test("FrameDecoder: a frame inside one chunk is a view of it, not a copy", () => {
  const chunk = concat([encodeFrame(new Uint8Array([1, 2])), encodeFrame(fill(1000))]);
  const decoder = new FrameDecoder();
  decoder.push(chunk);
  const first = decoder.next()!;
  const second = decoder.next()!;
  assert.equal(decoder.next(), undefined);
  assert.equal(first.buffer, chunk.buffer);
  assert.equal(first.byteOffset, 4);
  assert.equal(second.buffer, chunk.buffer);
  assert.equal(second.byteOffset, 10);
  assert.equal(decoder.bytesCopied, 0);
});

Deno.test("FrameDecoder: only a frame spanning chunks is copied, once", () => {
  const bytes = concat([encodeFrame(fill(10)), encodeFrame(fill(20)), encodeFrame(fill(5))]);
  const decoder = new FrameDecoder();
  // The first frame fits in chunk 1; the second spans chunks 1 and 2; the third fits in 2.
  const cut = 14 + 4 + 8;
  decoder.push(bytes.subarray(0, cut));
  const first = decoder.next()!;
  assert.equal(first.buffer, bytes.buffer);
  assert.equal(decoder.next(), undefined);
  decoder.push(bytes.subarray(cut));
  const second = decoder.next()!;
  assert.notEqual(second.buffer, bytes.buffer);
  assert.equal(second.buffer.byteLength, 20, "copied into a buffer of its exact size");
  assert.deepEqual(second, fill(20));
  const third = decoder.next()!;
  assert.equal(third.buffer, bytes.buffer);
  assert.equal(decoder.bytesCopied, 20);
});

Deno.test("FrameDecoder: a 64 MiB frame in 1 KiB chunks copies each byte once, and its buffer as it grew", () => {
  const size = 64 * 1024 * 1024;
  const frame = encodeFrame(fill(size));
  const decoder = new FrameDecoder();
  let decoded: Uint8Array | undefined;
  let chunks = 0;
  for (let offset = 0; offset < frame.length; offset += 1024) {
    decoder.push(frame.subarray(offset, offset + 1024));
    chunks++;
    for (let f = decoder.next(); f !== undefined; f = decoder.next()) decoded = f;
  }
  decoder.end();
  assert.equal(chunks, 65_537);
  assert.equal(decoded?.length, size);
  assert.equal(decoded![size - 1], (size - 1) % 251);
  // A decoder that concatenated its buffer with each chunk would copy ~N^2 / 2 KiB bytes
  // (2 TiB here); a linear one copies the payload once, and the buffer the frame was being
  // assembled in each time it grew eightfold (from 2 MiB, so that a header alone allocates
  // little): 2 + 16 MiB.
  assert.equal(decoder.bytesCopied, size + 18 * 1024 * 1024);
});

Deno.test("FrameDecoder: the header alone raises FrameTooLargeError naming size and limit", () => {
  const decoder = new FrameDecoder({ maxFrameBytes: 1000 });
  decoder.push(new Uint8Array([0xff, 0xff, 0xff, 0xff]));
  const err = thrown(() => decoder.next());
  assert.ok(err instanceof FrameTooLargeError);
  assert.equal(err.size, 0xffff_ffff);
  assert.equal(err.limit, 1000);
  assert.equal(err.message, "Frame of 4294967295 bytes exceeds maxFrameBytes (1000)");
  assert.equal(decoder.bytesCopied, 0);
});

Deno.test("FrameDecoder: a header split byte by byte is checked before buffering", () => {
  const decoder = new FrameDecoder();
  const header = encodeFrame(new Uint8Array(0));
  header[0] = 0x04; // 64 MiB + 4: just over the default
  header[3] = 0x04;
  for (let i = 0; i < 3; i++) {
    decoder.push(header.subarray(i, i + 1));
    assert.equal(decoder.next(), undefined);
  }
  decoder.push(header.subarray(3));
  assert.throws(() => decoder.next(), {
    name: "FrameTooLargeError",
    message: `Frame of 67108868 bytes exceeds maxFrameBytes (${DEFAULT_MAX_FRAME_BYTES})`,
  });
});

Deno.test("FrameDecoder: FrameTooLargeError keeps the frame's first bytes, however they came", () => {
  const text = new TextEncoder().encode(
    "worker starting up, and then a long line of text ".repeat(3),
  );
  const frame = encodeFrame(new Uint8Array([1, 2]));
  for (const split of [0, 2, 5]) {
    const decoder = new FrameDecoder();
    // A good frame first, so the text starts mid-chunk (or in the next chunk).
    const bytes = concat([frame, text]);
    decoder.push(bytes.subarray(0, frame.length + split));
    assert.deepEqual(decoder.next(), new Uint8Array([1, 2]));
    if (split < 4) {
      assert.equal(decoder.next(), undefined);
      decoder.push(bytes.subarray(frame.length + split));
    }
    const err = thrown(() => decoder.next());
    assert.ok(err instanceof FrameTooLargeError);
    const kept = split < 4 ? 64 : 5;
    assert.deepEqual(err.received, text.subarray(0, kept), `split ${split}`);
  }
});

Deno.test("FrameDecoder: maxFrameBytes 0 accepts empty frames only", () => {
  const decoder = new FrameDecoder({ maxFrameBytes: 0 });
  decoder.push(concat([encodeFrame(new Uint8Array(0)), encodeFrame(new Uint8Array(1))]));
  assert.deepEqual(decoder.next(), new Uint8Array(0));
  assert.throws(() => decoder.next(), { name: "FrameTooLargeError", message: /1 bytes.*\(0\)/ });
});

Deno.test("FrameDecoder: after an error, every call throws the same error", () => {
  const decoder = new FrameDecoder({ maxFrameBytes: 3 });
  decoder.push(concat([encodeFrame(fill(4)), encodeFrame(fill(1))]));
  const err = thrown(() => decoder.next());
  assert.ok(err instanceof FrameTooLargeError);
  assert.throws(() => decoder.next(), (e) => e === err);
  assert.throws(() => decoder.push(encodeFrame(fill(1))), (e) => e === err);
  assert.throws(() => decoder.end(), (e) => e === err);
});

Deno.test("FrameDecoder: end() mid-frame names the missing byte count", () => {
  const bytes = encodeFrame(fill(100));
  for (const [cut, missing] of [[1, 3], [3, 1], [4, 100], [5, 99], [103, 1]]) {
    const decoder = new FrameDecoder();
    decoder.push(bytes.subarray(0, cut));
    assert.equal(decoder.next(), undefined);
    assert.equal(decoder.midFrame, true);
    const err = thrown(() => decoder.end());
    assert.ok(err instanceof TruncatedFrameError);
    assert.equal(err.missing, missing, `cut at ${cut}`);
    assert.match(err.message, new RegExp(`${missing} more byte`));
  }
});

Deno.test("FrameDecoder: end() between frames is fine, and end() is repeatable", () => {
  const decoder = new FrameDecoder();
  decoder.push(encodeFrame(fill(3)));
  assert.deepEqual(decoder.next(), fill(3));
  assert.equal(decoder.next(), undefined);
  decoder.end();
  decoder.end();
});

Deno.test("FrameDecoder: push() before draining the previous chunk is refused", () => {
  const decoder = new FrameDecoder();
  decoder.push(concat([encodeFrame(fill(1)), encodeFrame(fill(1))]));
  decoder.next();
  assert.throws(() => decoder.push(fill(1)), /drained/);
});

Deno.test("FrameDecoder: random garbage gives frames or a FramingError, never a crash", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 2000 }),
      chunkingArb(),
      fc.integer({ min: 0, max: 5000 }),
      (garbage, rechunk, maxFrameBytes) => {
        try {
          decodeAll(new FrameDecoder({ maxFrameBytes }), rechunk(garbage));
        } catch (error) {
          assert.ok(error instanceof FramingError, `unexpected ${error}`);
          assert.ok(!(error instanceof FrameSyntaxError));
        }
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("FrameDecoder: maxFrameBytes outside 0..2^32-1 is a RangeError", () => {
  for (const maxFrameBytes of [-1, 1.5, 2 ** 32, NaN]) {
    assert.throws(() => new FrameDecoder({ maxFrameBytes }), RangeError);
  }
});

/**
 * Decodes `bytes` as a reader would that reads into the decoder's `readTarget()` whenever it
 * offers one and takes an ordinary chunk of the next size otherwise. A read into the target
 * is in place (`false`), or transfers the target's buffer the way a BYOB read does (`true`),
 * or (`"swap"`), when the target is a whole buffer that the read fills, returns another
 * buffer and detaches the target's, as a thread transport's read of a transferred message
 * does. Returns the frames (copied, a split frame's head and tail joined), how many were
 * split, and the decoder.
 */
function decodeDirect(
  bytes: Uint8Array,
  sizes: readonly number[],
  transfers: readonly (boolean | "swap")[],
  splitHead?: (start: Uint8Array) => number | undefined,
): { frames: Uint8Array[]; decoder: FrameDecoder; direct: number; split: number } {
  const decoder = new FrameDecoder({ splitHead });
  const frames: Uint8Array[] = [];
  let offset = 0;
  let direct = 0;
  let split = 0;
  for (let k = 0; offset < bytes.length; k++) {
    const size = sizes[k % sizes.length];
    const target = decoder.readTarget();
    if (target === undefined) {
      decoder.push(bytes.subarray(offset, offset += size));
    } else {
      const n = Math.min(size, target.length, bytes.length - offset);
      const mode = transfers[k % transfers.length];
      const whole = target.byteOffset === 0 && target.buffer.byteLength === target.length;
      if (mode === "swap" && whole && n === target.length) {
        transfer(target);
        decoder.push(bytes.slice(offset, offset += n));
      } else {
        let into = target;
        if (mode === true) {
          const { byteOffset, length } = target;
          into = new Uint8Array(transfer(target), byteOffset, length);
          assert.equal(target.length, 0, "the transfer detached the target");
        }
        into.set(bytes.subarray(offset, offset += n));
        decoder.push(into.subarray(0, n));
      }
      direct += n;
    }
    for (let frame = decoder.next(); frame !== undefined; frame = decoder.next()) {
      const tail = decoder.tail;
      if (tail === undefined) frames.push(frame.slice());
      else {
        split++;
        assert.ok(tail.byteOffset === 0 && tail.buffer.byteLength === tail.length, "whole tail");
        frames.push(concat([frame, tail]));
      }
    }
  }
  decoder.end();
  return { frames, decoder, direct, split };
}

Deno.test("FrameDecoder: reads into readTarget(), in place or transferred, decode the same frames", () => {
  let directBytes = 0;
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(payloadArb(), fc.integer({ min: 60_000, max: 300_000 }).map((n) => fill(n))),
        { minLength: 1, maxLength: 6 },
      ),
      fc.array(fc.integer({ min: 1, max: 90_000 }), { minLength: 1, maxLength: 20 }),
      fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
      (frames, sizes, transfers) => {
        const bytes = concat(frames.map(encodeFrame));
        const { frames: decoded, decoder, direct } = decodeDirect(bytes, sizes, transfers);
        assert.deepEqual(decoded, frames);
        assert.equal(decoder.midFrame, false);
        // Every byte is either read where it belongs, or copied at most once.
        assert.ok(decoder.bytesCopied + direct <= bytes.length);
        directBytes += direct;
      },
    ),
    { numRuns: 40 },
  );
  assert.ok(directBytes > 0, "some runs read into the target");
});

Deno.test("FrameDecoder with splitHead: large frames come out as head and tail, whatever the reads", () => {
  let splitFrames = 0;
  let swapped = 0;
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          payloadArb(),
          fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 60_000, max: 300_000 }))
            .map(([head, n]) => {
              // A head of `head` bytes, whose first byte says its length.
              const payload = fill(n);
              payload[0] = head;
              return payload;
            }),
        ),
        { minLength: 1, maxLength: 6 },
      ),
      fc.array(fc.integer({ min: 1, max: 90_000 }), { minLength: 1, maxLength: 20 }),
      fc.array(fc.constantFrom(false, true, "swap" as const), { minLength: 1, maxLength: 5 }),
      (frames, sizes, transfers) => {
        const bytes = concat(frames.map(encodeFrame));
        let swaps = 0;
        const result = decodeDirect(
          bytes,
          sizes,
          transfers.map((mode) => mode === "swap" ? (swaps++, mode) : mode),
          (start) => start.length > 0 && start[0] + 1 <= start.length ? start[0] + 1 : undefined,
        );
        assert.deepEqual(result.frames, frames);
        assert.equal(result.decoder.midFrame, false);
        // Bytes read into a target for the next header and head are an ordinary chunk, so
        // only this holds here: no byte is copied twice.
        assert.ok(result.decoder.bytesCopied <= bytes.length);
        splitFrames += result.split;
        swapped += swaps;
      },
    ),
    { numRuns: 60 },
  );
  assert.ok(splitFrames > 0 && swapped > 0, "some runs split frames and swapped buffers");
});

Deno.test("FrameDecoder with splitHead: a tail that arrives as one buffer is taken, not copied, and recycles", () => {
  // As over a thread transport: the header and head in one message, the body in the next.
  const decoder = new FrameDecoder({ splitHead: () => 3 });
  for (let round = 0; round < 3; round++) {
    const head = new Uint8Array([0, 1, 0, 3, 7, 8, 9]); // 65,539 bytes announced
    decoder.push(head);
    assert.equal(decoder.next(), undefined);
    const target = decoder.readTarget()!;
    assert.equal(target.length, 65_536);
    assert.equal(target.buffer.byteLength, 65_536, "the tail's own buffer");
    const body = new Uint8Array(65_536).fill(round + 1);
    transfer(target); // what the transport does before handing over its message
    decoder.push(body);
    assert.deepEqual(decoder.next(), new Uint8Array([7, 8, 9]));
    assert.equal(decoder.tail?.buffer, body.buffer, "the body's own memory");
    assert.equal(decoder.next(), undefined);
    assert.equal(decoder.tail, undefined, "only until the next next()");
    assert.equal(decoder.recycle(body), true);
    // The next frame's header and head are read into a buffer of their own.
    const probe = decoder.readTarget()!;
    assert.ok(probe.length > 4 + 3 && probe.buffer.byteLength === probe.length);
  }
  assert.equal(decoder.bytesCopied, 3 * 3, "the heads only");
  assert.equal(decoder.buffersAllocated, 1, "the later tails' targets were recycled buffers");
  decoder.end();
});

Deno.test("FrameDecoder: a large frame is read into its own buffer, and the next header alone", () => {
  const big = fill(300_000);
  const bytes = concat([encodeFrame(big), encodeFrame(fill(200_000)), encodeFrame(fill(10))]);
  const decoder = new FrameDecoder();
  assert.equal(decoder.readTarget(), undefined, "nothing to offer before the first header");
  decoder.push(bytes.subarray(0, 1000));
  assert.equal(decoder.next(), undefined);
  assert.equal(decoder.pendingBytes, 299_004);

  const target = decoder.readTarget()!;
  assert.equal(target.length, 299_004);
  assert.equal(target.byteOffset, 996);
  target.set(bytes.subarray(1000, 200_000));
  decoder.push(target.subarray(0, 199_000));
  assert.equal(decoder.next(), undefined);
  assert.equal(decoder.pendingBytes, 100_004);
  // Once reading into the frame, it stays there to its end, below 64 KiB too.
  const rest = decoder.readTarget()!;
  assert.equal(rest.length, 100_004);
  assert.equal(rest.buffer, target.buffer);
  rest.set(bytes.subarray(200_000, 300_004));
  decoder.push(rest);
  const frame = decoder.next()!;
  assert.equal(frame.buffer, target.buffer, "the frame is the buffer read into");
  assert.deepEqual(frame, big);
  assert.equal(decoder.bytesCopied, 996);

  // The next header is read alone, then its whole frame into its buffer.
  const header = decoder.readTarget()!;
  assert.equal(header.length, 4);
  header.set(bytes.subarray(300_004, 300_008));
  decoder.push(header);
  assert.equal(decoder.next(), undefined);
  assert.equal(decoder.pendingBytes, 200_000);
  const second = decoder.readTarget()!;
  assert.equal(second.length, 200_000);
  second.set(bytes.subarray(300_008, 500_008));
  decoder.push(second);
  assert.deepEqual(decoder.next(), fill(200_000));
  assert.equal(decoder.bytesCopied, 996);

  // A small frame after the header read: an ordinary chunk serves it, and frames again come
  // as views of their chunk, with no read target until a large frame spans chunks.
  const tail = bytes.subarray(500_008);
  const small = decoder.readTarget()!;
  small.set(tail.subarray(0, 4));
  decoder.push(small);
  assert.equal(decoder.next(), undefined);
  assert.equal(decoder.pendingBytes, 10);
  assert.equal(decoder.readTarget(), undefined, "10 bytes are not worth a read of their own");
  decoder.push(tail.subarray(4));
  assert.deepEqual(decoder.next(), fill(10));
  assert.equal(decoder.readTarget(), undefined);
  decoder.push(encodeFrame(fill(3)));
  assert.equal(decoder.next()!.byteOffset, 4);
  decoder.end();
});

Deno.test("FrameDecoder: a frame needing under 64 KiB more gets no read target", () => {
  const decoder = new FrameDecoder();
  decoder.push(encodeFrame(fill(70_000)).subarray(0, 10_000));
  assert.equal(decoder.next(), undefined);
  assert.equal(decoder.pendingBytes, 60_004);
  assert.equal(decoder.readTarget(), undefined);
});

Deno.test("FrameDecoder: large frames back to back are read into their own buffers, until a small one", () => {
  const large = encodeFrame(fill(70_000));
  const decoder = new FrameDecoder();
  // A large frame alone in its read, as replies to sequential calls come: a view, and no read
  // of its own for the next one (which would cost a call a second read).
  decoder.push(large);
  assert.equal(decoder.next()!.byteOffset, 4);
  assert.equal(decoder.readTarget(), undefined);
  // One followed by more bytes in the same read: large frames come back to back. The rest of
  // the next one, under 64 KiB, is read straight into its buffer all the same.
  decoder.push(concat([large, large.subarray(0, 10_000)]));
  assert.equal(decoder.next()!.byteOffset, 4);
  assert.equal(decoder.next(), undefined);
  const rest = decoder.readTarget()!;
  assert.equal(rest.length, 60_004);
  assert.equal(rest.buffer.byteLength, 70_000);
  rest.set(large.subarray(10_000));
  decoder.push(rest);
  const second = decoder.next()!;
  assert.equal(second.buffer, rest.buffer, "a buffer holding this frame alone");
  assert.deepEqual(second, fill(70_000));
  // Then each next header alone, and its frame into a buffer of its own.
  for (let i = 0; i < 3; i++) {
    const header = decoder.readTarget()!;
    assert.equal(header.length, 4);
    header.set(large.subarray(0, 4));
    decoder.push(header);
    assert.equal(decoder.next(), undefined);
    const body = decoder.readTarget()!;
    assert.equal(body.length, 70_000);
    body.set(large.subarray(4));
    decoder.push(body);
    const frame = decoder.next()!;
    assert.equal(frame.buffer, body.buffer);
    assert.equal(frame.buffer.byteLength, 70_000);
  }
  // A small frame ends the run: large frames are views of their read again.
  const header = decoder.readTarget()!;
  header.set(encodeFrame(fill(10)).subarray(0, 4));
  decoder.push(header);
  assert.equal(decoder.next(), undefined);
  assert.equal(decoder.readTarget(), undefined, "10 bytes are not worth a read of their own");
  decoder.push(fill(10));
  assert.deepEqual(decoder.next(), fill(10));
  decoder.push(large);
  assert.equal(decoder.next()!.byteOffset, 4);
  assert.equal(decoder.readTarget(), undefined);
  // So does a small frame after a large one in the same read.
  decoder.push(concat([large, encodeFrame(fill(3))]));
  assert.equal(decoder.next()!.byteOffset, 4);
  assert.deepEqual(decoder.next(), fill(3));
  assert.equal(decoder.next(), undefined);
  assert.equal(decoder.readTarget(), undefined);
  decoder.push(large);
  assert.equal(decoder.next()!.byteOffset, 4);
  decoder.end();
});

Deno.test("FrameDecoder: another chunk pushed instead of the read target is decoded as usual", () => {
  const bytes = encodeFrame(fill(100_000));
  const decoder = new FrameDecoder();
  decoder.push(bytes.subarray(0, 50));
  decoder.next();
  const target = decoder.readTarget()!;
  target.fill(0xee); // scribbled on, then not pushed: the next push must overwrite it
  decoder.push(bytes.subarray(50));
  assert.deepEqual(decoder.next(), fill(100_000));
  assert.equal(decoder.bytesCopied, 100_000);
});

Deno.test("FrameDecoder: a transferred read target must come back as the read's view", () => {
  const decoder = new FrameDecoder();
  decoder.push(encodeFrame(fill(100_000)).subarray(0, 50));
  decoder.next();
  const target = decoder.readTarget()!;
  const moved = new Uint8Array(transfer(target));
  assert.throws(
    () => decoder.push(moved.subarray(0, 10)),
    /needs the view the read into readTarget\(\) returned/,
  );
});

Deno.test("FrameDecoder: a stream ending during a read into the target names what is missing", () => {
  const decoder = new FrameDecoder();
  decoder.push(encodeFrame(fill(100_000)).subarray(0, 50));
  decoder.next();
  const target = decoder.readTarget()!;
  // A BYOB read that found the end transfers the buffer and returns no bytes.
  const { byteOffset } = target;
  decoder.push(new Uint8Array(transfer(target), byteOffset, 0));
  assert.equal(decoder.next(), undefined);
  assert.equal(decoder.pendingBytes, 99_954);
  const err = thrown(() => decoder.end());
  assert.ok(err instanceof TruncatedFrameError);
  assert.equal(err.missing, 99_954);
});

Deno.test("FrameDecoder: readTarget() refuses an undrained chunk and repeats a sticky error", () => {
  const decoder = new FrameDecoder({ maxFrameBytes: 3 });
  decoder.push(concat([encodeFrame(fill(1)), encodeFrame(fill(4))]));
  decoder.next();
  assert.throws(() => decoder.readTarget(), /drained/);
  const err = thrown(() => decoder.next());
  assert.ok(err instanceof FrameTooLargeError);
  assert.throws(() => decoder.readTarget(), (e) => e === err);
});

Deno.test("encodeFrame: writes a big-endian length before the payload", () => {
  assert.deepEqual(
    encodeFrame(fill(0x0102_03)).subarray(0, 4),
    new Uint8Array([0x00, 0x01, 0x02, 0x03]),
  );
  assert.deepEqual(encodeFrame(new Uint8Array(0)), new Uint8Array(4));
});

function fill(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = i % 251;
  return bytes;
}

/** Moves a view's buffer as a BYOB read does, detaching the view. */
function transfer(view: Uint8Array): ArrayBuffer {
  return (view.buffer as ArrayBuffer).transfer();
}

const KIB = 1024;
const MIB = 1024 * KIB;
/** Small and large frames, in runs, as a channel carrying big results sees them. */
const SIZES = [64, MIB, MIB, 3 * MIB, 10, 200 * KIB, MIB, 0, 70 * KIB, 5, 2 * MIB];

/** Writes frames of `sizes` (each filled with its index), then closes the writable. */
async function writeFrames(transport: Transport, sizes: readonly number[]): Promise<void> {
  const writer = new FrameWriter(transport.writable);
  for (const [i, size] of sizes.entries()) {
    writer.write(new Uint8Array(size).fill(i));
    if (writer.desiredSize <= 0) await writer.ready;
  }
  await writer.close();
}

/** Reads frames to the end through a FrameReader; returns them and the decoder. */
async function readFrames(
  source: FrameSource,
): Promise<{ frames: Uint8Array[]; decoder: FrameDecoder }> {
  const decoder = new FrameDecoder();
  const reader = new FrameReader(source, decoder);
  const frames: Uint8Array[] = [];
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    decoder.push(r.value);
    for (let frame = decoder.next(); frame !== undefined; frame = decoder.next()) {
      frames.push(frame);
    }
  }
  decoder.end();
  return { frames, decoder };
}

function assertFrames(frames: readonly Uint8Array[], sizes: readonly number[]): void {
  assert.equal(frames.length, sizes.length);
  for (const [i, frame] of frames.entries()) {
    assert.equal(frame.length, sizes[i], `frame ${i}`);
    assert.ok(frame.every((byte) => byte === i), `frame ${i} holds its own bytes`);
  }
}

Deno.test("FrameReader: over a Unix socket, large frames are read into their own buffers", async () => {
  const { a, b, cleanup } = await unix.pair();
  try {
    const [, { frames, decoder }] = await Promise.all([writeFrames(a, SIZES), readFrames(b)]);
    assertFrames(frames, SIZES);
    const total = SIZES.reduce((sum, size) => sum + size, 0);
    // Only the start of a run of large frames comes through the read buffer and is copied
    // (at most a read or two, 256 KiB each); the rest lands where it belongs.
    assert.ok(
      decoder.bytesCopied < total / 4,
      `${decoder.bytesCopied} of ${total} bytes copied`,
    );
    const own = frames.filter((f) => f.length >= MIB && f.buffer.byteLength === f.length);
    assert.ok(own.length >= 4, "the 1 MiB+ frames have buffers of their own");
  } finally {
    await cleanup();
  }
});

Deno.test("FrameReader: a source without readInto is read through its readable", async () => {
  const [a, b] = memoryPair();
  try {
    const [, { frames, decoder }] = await Promise.all([writeFrames(a, SIZES), readFrames(b)]);
    assertFrames(frames, SIZES);
    assert.ok(decoder.bytesCopied > 0, "spanning frames were copied, as without FrameReader");
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

Deno.test("FrameReader: a stream ending inside a frame read into its buffer is a TruncatedFrameError", async () => {
  const { a, b, cleanup } = await unix.pair();
  try {
    const writer = a.writable.getWriter();
    // A header announcing 1 MiB, then only 300 KiB of it.
    const writing = (async () => {
      await writer.write(new Uint8Array([0, 0x10, 0, 0]));
      await writer.write(new Uint8Array(300 * KIB));
      await writer.close();
    })();
    const error = await readFrames(b).catch((e) => e);
    await writing;
    assert.equal(error.name, "TruncatedFrameError");
    assert.equal(error.missing, MIB - 300 * KIB);
  } finally {
    await cleanup();
  }
});

Deno.test("FrameReader: cancel() settles a pending read and locks the stream no longer after releaseLock()", async () => {
  const { b, cleanup } = await unix.pair();
  try {
    // The stream's way: a source with readInto but no readChunk.
    const source: FrameSource = { readable: b.readable, readInto: b.readInto };
    const reader = new FrameReader(source, new FrameDecoder());
    assert.equal(b.readable.locked, true);
    const reading = reader.read();
    await reader.cancel();
    assert.equal((await reading).done, true);
    reader.releaseLock();
    assert.equal(b.readable.locked, false);
  } finally {
    await cleanup();
  }
});

Deno.test("FrameReader: a source with readChunk is read with it, its readable left alone", async () => {
  const { a, b, cleanup } = await unix.pair();
  try {
    const decoder = new FrameDecoder();
    const reader = new FrameReader(b, decoder);
    // Never locked, never read: a transport need not even create it.
    assert.equal(b.readable.locked, false);
    const writer = new FrameWriter(a.writable);
    writer.write(new Uint8Array([1, 2]));
    await writer.flush();
    const result = await reader.read();
    assert.equal(result.done, false);
    decoder.push(result.value!);
    assert.deepEqual(decoder.next(), new Uint8Array([1, 2]));
    // cancel() and releaseLock() have nothing to do; closing the transport ends a pending read.
    const reading = reader.read();
    await reader.cancel();
    reader.releaseLock();
    await b.close();
    assert.equal((await reading).done, true);
    await writer.close();
  } finally {
    await cleanup();
  }
});
