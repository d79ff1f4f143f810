import assert from "node:assert/strict";
import { memoryPair } from "../transports/memory.ts";
import type { Transport } from "../transports/types.ts";
import { unix } from "../transports/_test_pairs.ts";
import { FrameDecoder } from "./frame_decoder.ts";
import { FrameReader, type FrameSource } from "./frame_reader.ts";
import { FrameWriter } from "./frame_writer.ts";

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
