import assert from "node:assert/strict";
import {
  DIRECT_READ_MIN_BYTES,
  LargeFrames,
  MAX_RECYCLED_BUFFERS,
  PartialFrame,
} from "./_large_frames.ts";

const LARGE = DIRECT_READ_MIN_BYTES;

Deno.test("LargeFrames: a large frame's rest is read direct only when it is large itself", () => {
  const large = new LargeFrames(undefined);
  assert.equal(large.readsDirect(LARGE, LARGE), true);
  assert.equal(large.readsDirect(LARGE, LARGE - 1), false);
  assert.equal(large.readsDirect(LARGE - 1, 10), false);
});

Deno.test("LargeFrames: large frames back to back are read apart until a small frame", () => {
  const large = new LargeFrames(undefined);
  large.viewed(LARGE, false); // alone in its chunk: stays a view
  assert.equal(large.expectLarge, false);
  large.viewed(LARGE, true); // more bytes after it: a run
  assert.equal(large.expectLarge, true);
  assert.equal(large.readsDirect(LARGE, 1), true, "a large frame's rest, however small");
  assert.equal(large.readsDirect(LARGE - 1, 1), false, "a small frame is never read apart");
  large.viewed(100, true); // a small frame ends the run
  assert.equal(large.expectLarge, false);
  assert.equal(large.readsDirect(LARGE, 1), false);
});

Deno.test("LargeFrames: a large frame handed back makes every later one read apart", () => {
  const large = new LargeFrames(undefined);
  const frame = large.start(LARGE, undefined).bytes;
  large.assembled(frame, LARGE, false);
  assert.equal(large.recycle(frame), true);
  assert.equal(frame.length, 0, "the frame's views are detached");
  assert.equal(large.recycle(frame), false, "once");
  large.small();
  assert.equal(large.readsDirect(LARGE, 1), true, "a small frame does not end recycling");
});

Deno.test("LargeFrames: buffers of recycled frames serve later frames of their size", () => {
  const large = new LargeFrames(undefined);
  const frames = Array.from({ length: MAX_RECYCLED_BUFFERS + 1 }, (_, i) => {
    const frame = large.start(LARGE + i, undefined).bytes;
    large.assembled(frame, LARGE + i, true);
    return frame;
  });
  assert.equal(large.buffersAllocated, MAX_RECYCLED_BUFFERS + 1);
  for (const frame of frames) assert.equal(large.recycle(frame), true);
  // The oldest was dropped: its size gets a new buffer, the others reuse theirs.
  for (let i = MAX_RECYCLED_BUFFERS; i >= 0; i--) large.start(LARGE + i, undefined).bytes;
  assert.equal(large.buffersAllocated, MAX_RECYCLED_BUFFERS + 2);
});

Deno.test("LargeFrames: a frame smaller than 64 KiB or a view is not taken back", () => {
  const large = new LargeFrames(undefined);
  const small = large.start(LARGE - 1, undefined).bytes;
  large.assembled(small, LARGE - 1, false);
  assert.equal(large.recycle(small), false);
  assert.equal(large.recycle(new Uint8Array(LARGE)), false, "not a buffer it gave");
});

Deno.test("LargeFrames: splitHead splits only a frame whose rest is read direct", () => {
  const large = new LargeFrames((start) => start[0]);
  const start = new Uint8Array([3, 0, 0, 0, 0]);
  assert.equal(large.splitAt(2 * LARGE, start), 3);
  assert.equal(large.splitAt(LARGE, start), 0, "its rest is under 64 KiB: kept whole");
  assert.equal(large.splitAt(2 * LARGE, new Uint8Array([9, 0])), 0, "past the start: whole");
  assert.equal(large.probe()?.length, 4 + 2 * 1024);
  assert.equal(new LargeFrames(undefined).probe(), undefined);
});

Deno.test("PartialFrame: a large frame's buffer starts at 2 MiB and grows eightfold to its size", () => {
  const size = 40 * 1024 * 1024 + 1;
  const frame = new PartialFrame(size);
  const capacities = [frame.capacity];
  const chunk = new Uint8Array(1024 * 1024 + 3).map((_, i) => i);
  let copied = 0;
  while (frame.fill < size) {
    const from = size - frame.fill < chunk.length ? chunk.length - (size - frame.fill) : 0;
    const before = frame.fill;
    assert.equal(frame.take(chunk, from), chunk.length);
    copied += frame.fill - before;
    if (frame.capacity !== capacities.at(-1)) capacities.push(frame.capacity);
  }
  const mib = 1024 * 1024;
  assert.deepEqual(capacities, [2 * mib, 16 * mib, size]);
  assert.equal(frame.bytes.length, size);
  // What grew was copied once more per step.
  assert.equal(frame.copied, copied + 2 * mib + 16 * mib);
  assert.equal(frame.bytes[size - 1], chunk[chunk.length - 1]);
  assert.equal(frame.bytes[2 * mib], chunk[(2 * mib) % chunk.length]);
  // Up to twice the first buffer, a frame gets its whole buffer at once.
  assert.equal(new PartialFrame(4 * mib).capacity, 4 * mib);
});
