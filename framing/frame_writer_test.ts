import assert from "node:assert/strict";
import fc from "fast-check";
import { FrameTooLargeError, TransportClosedError } from "../errors.ts";
import { payloadArb } from "./_test_util.ts";
import { encodeFrame, FrameDecoder } from "./frame_decoder.ts";
import { FrameWriter } from "./frame_writer.ts";

/** A sink that records each write, and can be held so writes stay in flight. */
class RecordingSink {
  readonly writes: Uint8Array[] = [];
  readonly writable: WritableStream<Uint8Array>;
  aborted: unknown = "not aborted";
  closed = false;
  #held: PromiseWithResolvers<void> | undefined;

  constructor(fail?: (chunk: Uint8Array) => Error | undefined) {
    this.writable = new WritableStream<Uint8Array>({
      write: (chunk) => {
        this.writes.push(chunk);
        const error = fail?.(chunk);
        if (error) throw error;
        return this.#held?.promise;
      },
      close: () => void (this.closed = true),
      abort: (reason) => void (this.aborted = reason),
    });
  }

  hold(): void {
    this.#held = Promise.withResolvers();
  }

  release(): void {
    this.#held?.resolve();
    this.#held = undefined;
  }

  frames(): Uint8Array[] {
    const decoder = new FrameDecoder();
    const frames: Uint8Array[] = [];
    for (const chunk of this.writes) {
      decoder.push(chunk);
      for (let f = decoder.next(); f !== undefined; f = decoder.next()) frames.push(f.slice());
    }
    decoder.end();
    return frames;
  }
}

async function microtasks(hops: number): Promise<void> {
  for (let i = 0; i < hops; i++) await undefined;
}

Deno.test("FrameWriter: frames written in one synchronous run go out in one write", async () => {
  const sink = new RecordingSink();
  const writer = new FrameWriter(sink.writable, { firstWriteBytes: Infinity });
  const frames = Array.from({ length: 200 }, (_, i) => new Uint8Array(i % 40).fill(i));
  for (const frame of frames) writer.write(frame);
  assert.equal(sink.writes.length, 0, "nothing is written synchronously");
  await writer.flush();
  assert.equal(sink.writes.length, 1);
  assert.deepEqual(sink.frames(), frames);
  await writer.close();
  assert.equal(sink.closed, true);
});

Deno.test("FrameWriter: a burst's first firstWriteBytes go out at once, the rest in one write after", async () => {
  const sink = new RecordingSink();
  const writer = new FrameWriter(sink.writable, { firstWriteBytes: 512 });
  await writer.ready; // the stream has started
  sink.hold();
  const frames = Array.from({ length: 40 }, (_, i) => new Uint8Array(40).fill(i));
  for (const frame of frames.slice(0, 11)) writer.write(frame);
  assert.equal(sink.writes.length, 0, "484 bytes queued: they wait for the turn's end");
  writer.write(frames[11]);
  assert.equal(sink.writes.length, 1, "528 bytes queued: written without waiting");
  assert.equal(sink.writes[0].length, 528);
  for (const frame of frames.slice(12)) writer.write(frame);
  await microtasks(20);
  assert.equal(sink.writes.length, 1, "the rest waits for the first write");
  sink.release();
  await writer.flush();
  assert.equal(sink.writes.length, 2, "the rest of the turn in one write");
  assert.deepEqual(sink.frames(), frames);
  // Idle again: a turn below the threshold is one write at its end.
  for (const frame of frames.slice(0, 5)) writer.write(frame);
  assert.equal(sink.writes.length, 2);
  await writer.flush();
  assert.equal(sink.writes.length, 3);
  await writer.close();
});

Deno.test("FrameWriter: a lone frame is written within the same turn", async () => {
  const sink = new RecordingSink();
  const writer = new FrameWriter(sink.writable);
  writer.write(new Uint8Array([1]));
  await microtasks(50);
  assert.deepEqual(sink.writes, [encodeFrame(new Uint8Array([1]))]);
  await writer.close();
});

Deno.test("FrameWriter: writeQueued starts the write at once, unless one is in flight", async () => {
  const sink = new RecordingSink();
  const writer = new FrameWriter(sink.writable);
  await writer.ready; // the stream has started
  writer.writeQueued();
  assert.equal(sink.writes.length, 0, "nothing queued, nothing written");
  sink.hold();
  writer.write(new Uint8Array([1]));
  writer.writeQueued();
  assert.deepEqual(sink.writes, [encodeFrame(new Uint8Array([1]))], "written synchronously");
  writer.write(new Uint8Array([2]));
  writer.writeQueued();
  assert.equal(sink.writes.length, 1, "the first write is still in flight");
  sink.release();
  await writer.flush();
  assert.deepEqual(sink.frames(), [new Uint8Array([1]), new Uint8Array([2])]);
  await writer.close();
});

Deno.test("FrameWriter: flush waits for the frames queued so far, not for later ones", async () => {
  const sink = new RecordingSink();
  const writer = new FrameWriter(sink.writable);
  sink.hold();
  writer.write(new Uint8Array([1]));
  await microtasks(20);
  assert.equal(sink.writes.length, 1, "the first frame's write is in flight");
  let first = false;
  const firstFlushed = writer.flush().then(() => first = true);
  writer.write(new Uint8Array([2]));
  let second = false;
  const secondFlushed = writer.flush().then(() => second = true);
  await microtasks(20);
  assert.equal(first, false);
  sink.release();
  sink.hold(); // the second frame's write stays in flight
  await firstFlushed;
  await microtasks(20);
  assert.equal(sink.writes.length, 2);
  assert.equal(second, false, "the second frame is not written yet");
  sink.release();
  await secondFlushed;
  await writer.close();
});

Deno.test("FrameWriter: a whole batch starts its write at once; the rest follows", async () => {
  const sink = new RecordingSink();
  // firstWriteBytes above the batch: a whole batch is written at once all the same.
  const writer = new FrameWriter(sink.writable, { maxBatchBytes: 1024, firstWriteBytes: 4096 });
  await writer.ready;
  const frames = Array.from({ length: 30 }, (_, i) => new Uint8Array(100).fill(i));
  for (const frame of frames.slice(0, 9)) writer.write(frame);
  assert.equal(sink.writes.length, 0, "936 bytes queued: less than a batch");
  writer.write(frames[9]);
  assert.equal(sink.writes.length, 1, "1040 bytes queued: written without waiting");
  for (const frame of frames.slice(10)) writer.write(frame);
  await writer.flush();
  for (const chunk of sink.writes) assert.ok(chunk.length <= 1024);
  assert.deepEqual(sink.frames(), frames);
  await writer.close();
});

Deno.test("FrameWriter: frames written while a write is in flight share the next write", async () => {
  const sink = new RecordingSink();
  const writer = new FrameWriter(sink.writable);
  sink.hold();
  writer.write(new Uint8Array([1]));
  await microtasks(20);
  assert.equal(sink.writes.length, 1);
  for (let i = 0; i < 50; i++) writer.write(new Uint8Array([2]));
  await microtasks(20);
  assert.equal(sink.writes.length, 1, "held while the first write is in flight");
  sink.release();
  await writer.flush();
  assert.equal(sink.writes.length, 2);
  assert.equal(sink.frames().length, 51);
  await writer.close();
});

Deno.test("FrameWriter: batches stay within maxBatchBytes; large payloads are not copied", async () => {
  const sink = new RecordingSink();
  const writer = new FrameWriter(sink.writable, { maxBatchBytes: 1024 });
  const large = new Uint8Array(5000).fill(7);
  const frames = [...Array.from({ length: 30 }, () => new Uint8Array(100)), large];
  for (const frame of frames) writer.write(frame);
  await writer.close();
  for (const chunk of sink.writes) assert.ok(chunk.length <= 1024 || chunk === large);
  assert.ok(sink.writes.includes(large), "the very payload written");
  assert.deepEqual(sink.frames(), frames);
});

Deno.test("FrameWriter: ready and desiredSize apply backpressure", async () => {
  const sink = new RecordingSink();
  // One batch for the six frames, whose write the sink holds.
  const writer = new FrameWriter(sink.writable, { highWaterMark: 1000, firstWriteBytes: Infinity });
  assert.equal(writer.desiredSize, 1000);
  await writer.ready;
  sink.hold();
  for (let i = 0; i < 6; i++) writer.write(new Uint8Array(196));
  assert.equal(writer.desiredSize, -200);
  let ready = false;
  const readyPromise = writer.ready.then(() => ready = true);
  await microtasks(50);
  assert.equal(ready, false, "over the mark while the sink holds the write");
  assert.ok(writer.desiredSize <= 0);
  sink.release();
  await readyPromise;
  assert.equal(writer.desiredSize, 1000);
  await writer.close();
});

Deno.test("FrameWriter: with highWaterMark 0, ready resolves once the queue is empty", async () => {
  const sink = new RecordingSink();
  const writer = new FrameWriter(sink.writable, { highWaterMark: 0 });
  await writer.ready;
  writer.write(new Uint8Array(10));
  await writer.ready;
  assert.equal(sink.writes.length, 1);
  await writer.close();
});

Deno.test("FrameWriter: write after close throws TransportClosedError; close is idempotent", async () => {
  const sink = new RecordingSink();
  const writer = new FrameWriter(sink.writable);
  writer.write(new Uint8Array([1]));
  const closing = writer.close();
  assert.equal(writer.close(), closing);
  assert.throws(() => writer.write(new Uint8Array([2])), TransportClosedError);
  await closing;
  assert.deepEqual(sink.frames(), [new Uint8Array([1])], "queued frames are flushed first");
  assert.equal(sink.closed, true);
  assert.throws(() => writer.write(new Uint8Array([3])), TransportClosedError);
});

Deno.test("FrameWriter: a failing sink rejects later writes and flushes with the cause", async () => {
  const cause = new Error("disk on fire");
  const sink = new RecordingSink(() => cause);
  const writer = new FrameWriter(sink.writable);
  writer.write(new Uint8Array([1]));
  await assert.rejects(writer.flush(), (error) => {
    assert.ok(error instanceof TransportClosedError);
    assert.equal(error.cause, cause);
    assert.match(error.message, /disk on fire/);
    return true;
  });
  assert.throws(() => writer.write(new Uint8Array([2])), (error) => {
    assert.ok(error instanceof TransportClosedError);
    return error.cause === cause;
  });
  await assert.rejects(writer.ready, TransportClosedError);
  await assert.rejects(writer.close(), TransportClosedError);
});

Deno.test("FrameWriter: a stream that fails while idle is noticed before the next write", async () => {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = new FrameWriter(writable);
  const cause = new Error("peer went away");
  await readable.cancel(cause);
  await microtasks(10);
  assert.throws(() => writer.write(new Uint8Array([1])), (error) => {
    assert.ok(error instanceof TransportClosedError);
    return error.cause === cause;
  });
});

Deno.test("FrameWriter: onFailure is called once, with the writer's error, however it fails", async () => {
  const seen: TransportClosedError[] = [];
  const onFailure = (error: TransportClosedError) => seen.push(error);
  // A write that fails.
  const cause = new Error("broken pipe");
  const writer = new FrameWriter(new RecordingSink(() => cause).writable, { onFailure });
  writer.write(new Uint8Array([1]));
  assert.equal(seen.length, 0);
  await writer.flush().catch(() => {});
  assert.equal(seen.length, 1);
  assert.equal(seen[0], writer.error);
  assert.equal(seen[0].cause, cause);
  await writer.close().catch(() => {});
  await writer.abort();
  assert.equal(seen.length, 1);
  // A stream that fails while the writer is idle.
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const idle = new FrameWriter(writable, { onFailure });
  const gone = new Error("peer went away");
  await readable.cancel(gone);
  await microtasks(10);
  assert.equal(seen.length, 2);
  assert.equal(seen[1].cause, gone);
  // abort(), and not a plain close().
  const closed = new FrameWriter(new RecordingSink().writable, { onFailure });
  await closed.close();
  assert.equal(seen.length, 2);
  const aborted = new FrameWriter(new RecordingSink().writable, { onFailure });
  const reason = new Error("shutting down");
  await aborted.abort(reason);
  assert.equal(seen.length, 3);
  assert.equal(seen[2].cause, reason);
  assert.equal(idle.error, seen[1]);
});

Deno.test("FrameWriter: waiting ready and flush reject when the sink fails", async () => {
  const cause = new Error("broken pipe");
  let failNext = false;
  const sink = new RecordingSink(() => failNext ? cause : undefined);
  const writer = new FrameWriter(sink.writable, { highWaterMark: 10 });
  sink.hold();
  writer.write(new Uint8Array(100));
  await microtasks(20);
  writer.write(new Uint8Array(100));
  const ready = assert.rejects(writer.ready, TransportClosedError);
  const flushed = assert.rejects(writer.flush(), TransportClosedError);
  failNext = true;
  sink.release();
  await ready;
  await flushed;
});

Deno.test("FrameWriter: a payload over maxFrameBytes is refused; the writer stays usable", async () => {
  const sink = new RecordingSink();
  const writer = new FrameWriter(sink.writable, { maxFrameBytes: 4 });
  assert.throws(() => writer.write(new Uint8Array(5)), (error) => {
    assert.ok(error instanceof FrameTooLargeError);
    return error.size === 5 && error.limit === 4;
  });
  writer.write(new Uint8Array(4));
  await writer.close();
  assert.deepEqual(sink.frames(), [new Uint8Array(4)]);
});

Deno.test("FrameWriter: abort drops queued frames and aborts the stream", async () => {
  const sink = new RecordingSink();
  const writer = new FrameWriter(sink.writable);
  writer.write(new Uint8Array([1]));
  const reason = new Error("shutting down");
  await writer.abort(reason);
  assert.equal(sink.writes.length, 0);
  assert.equal(sink.aborted, reason);
  assert.throws(() => writer.write(new Uint8Array([2])), (error) => {
    assert.ok(error instanceof TransportClosedError);
    return error.cause === reason;
  });
  await assert.rejects(writer.flush(), TransportClosedError);
});

Deno.test("FrameWriter: any frames in random bursts arrive in order", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(payloadArb(), { maxLength: 20 }), { maxLength: 10 }),
      fc.integer({ min: 64, max: 512 }),
      async (bursts, maxBatchBytes) => {
        const sink = new RecordingSink();
        const writer = new FrameWriter(sink.writable, { maxBatchBytes });
        for (const burst of bursts) {
          for (const frame of burst) writer.write(frame);
          await writer.ready;
        }
        await writer.close();
        assert.deepEqual(sink.frames(), bursts.flat());
      },
    ),
    { numRuns: 100 },
  );
});

Deno.test("FrameWriter: options out of range are a RangeError", () => {
  const { writable } = new TransformStream<Uint8Array, Uint8Array>();
  assert.throws(() => new FrameWriter(writable, { highWaterMark: -1 }), RangeError);
  assert.throws(() => new FrameWriter(writable, { maxBatchBytes: 10 }), RangeError);
  assert.throws(() => new FrameWriter(writable, { firstWriteBytes: -1 }), RangeError);
  assert.throws(() => new FrameWriter(writable, { firstWriteBytes: NaN }), RangeError);
  assert.equal(writable.locked, false, "no lock taken when the options are refused");
});

Deno.test("FrameWriter: writeParts and write mixed in random bursts arrive in order", async () => {
  const part = fc.record({
    head: fc.uint8Array({ maxLength: 24 }),
    body: fc.oneof(
      payloadArb(),
      fc.integer({ min: 500, max: 2000 }).map((n) => new Uint8Array(n).fill(n)),
    ),
    whole: fc.boolean(),
  });
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(part, { maxLength: 20 }), { maxLength: 8 }),
      fc.integer({ min: 64, max: 512 }),
      async (bursts, maxBatchBytes) => {
        const sink = new RecordingSink();
        const writer = new FrameWriter(sink.writable, { maxBatchBytes });
        const expected: Uint8Array[] = [];
        const passed: Uint8Array[] = [];
        for (const burst of bursts) {
          for (const { head, body, whole } of burst) {
            const payload = new Uint8Array([...head, ...body]);
            expected.push(payload);
            if (whole) {
              writer.write(payload);
              if (payload.length + 4 > maxBatchBytes) passed.push(payload);
              continue;
            }
            writer.writeParts(head, body);
            // The head, and a body that fits in a batch, are copied at once.
            head.fill(0xee);
            if (payload.length + 4 <= maxBatchBytes) body.fill(0xee);
            else passed.push(body);
          }
          await writer.ready;
        }
        await writer.close();
        assert.deepEqual(sink.frames(), expected);
        for (const chunk of sink.writes) {
          assert.ok(chunk.length <= maxBatchBytes || passed.includes(chunk), "chunk bound");
        }
      },
    ),
    { numRuns: 150 },
  );
});

Deno.test("FrameWriter: writeParts checks head and body together against maxFrameBytes", async () => {
  const sink = new RecordingSink();
  const writer = new FrameWriter(sink.writable, { maxFrameBytes: 10 });
  assert.throws(
    () => writer.writeParts(new Uint8Array(6), new Uint8Array(5)),
    (error) => error instanceof FrameTooLargeError && error.message.includes("11"),
  );
  writer.writeParts(new Uint8Array([1]), new Uint8Array([2, 3]));
  await writer.close();
  assert.deepEqual(sink.frames(), [new Uint8Array([1, 2, 3])]);
});

Deno.test("FrameWriter: by default a frame with a 64 KiB body and a small head is one write", async () => {
  const sink = new RecordingSink();
  const writer = new FrameWriter(sink.writable);
  const head = new Uint8Array(12).fill(1);
  const body = new Uint8Array(64 * 1024).fill(2);
  writer.writeParts(head, body);
  await writer.flush();
  assert.equal(sink.writes.length, 1);
  assert.equal(sink.writes[0].length, 4 + 12 + 64 * 1024);
  // Past the default bound the body is not copied: the header and head, then the body.
  writer.writeParts(head, new Uint8Array(65 * 1024));
  await writer.close();
  assert.equal(sink.writes.length, 3);
  assert.equal(sink.writes[2].length, 65 * 1024);
});

Deno.test("FrameWriter with reuseChunks: a chunk's memory serves again only once it is written", async () => {
  const BIG = 40_000;
  const chunks: Uint8Array[] = [];
  const copies: Uint8Array[] = [];
  let hold: PromiseWithResolvers<void> | undefined;
  const writable = new WritableStream<Uint8Array>({
    write: (chunk) => {
      chunks.push(chunk);
      copies.push(chunk.slice());
      return hold?.promise;
    },
  });
  const writer = new FrameWriter(writable, { reuseChunks: true });
  hold = Promise.withResolvers();
  writer.write(new Uint8Array(BIG).fill(1));
  await new Promise((resolve) => setTimeout(resolve, 0));
  // Frames queued while the first chunk is being written leave it as it is.
  writer.write(new Uint8Array(BIG).fill(2));
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(chunks.length, 1);
  assert.deepEqual(chunks[0], encodeFrame(new Uint8Array(BIG).fill(1)));
  hold.resolve();
  hold = undefined;
  await writer.flush();
  writer.write(new Uint8Array(BIG).fill(3));
  await writer.close();
  const decoder = new FrameDecoder();
  const frames: number[] = [];
  for (const copy of copies) {
    decoder.push(copy);
    for (let f = decoder.next(); f !== undefined; f = decoder.next()) frames.push(f[0]);
  }
  assert.deepEqual(frames, [1, 2, 3]);
  // Each batch was written before the next was taken: all went through one buffer (chunks
  // this size are pooled; those of 32 KiB or less are not).
  assert.equal(new Set(chunks.map((chunk) => chunk.buffer)).size, 1);
});

Deno.test("FrameWriter with reuseChunks: small chunks share slabs across writers, and none changes once handed out, even while its write is held", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 0, max: 1_200 }), { minLength: 30, maxLength: 60 }),
      async (sizes) => {
        // Writer `held` has its first write held until the end, so its chunk stays in flight
        // while writer `busy` goes through batch after batch (and slab after slab).
        const record = (hold: Promise<void> | undefined) => {
          const chunks: Uint8Array[] = [];
          const copies: Uint8Array[] = [];
          const writable = new WritableStream<Uint8Array>({
            write: (chunk) => {
              chunks.push(chunk);
              copies.push(chunk.slice());
              return chunks.length === 1 ? hold : undefined;
            },
          });
          return { chunks, copies, writer: new FrameWriter(writable, { reuseChunks: true }) };
        };
        const release = Promise.withResolvers<void>();
        const held = record(release.promise);
        const busy = record(undefined);
        const frames = sizes.map((size, i) => new Uint8Array(size).fill(i + 1));
        held.writer.write(frames[0]);
        for (const frame of frames) {
          busy.writer.write(frame);
          await busy.writer.flush();
          held.writer.write(frame); // queued behind the held write
        }
        assert.equal(held.chunks.length, 1);
        release.resolve();
        await Promise.all([held.writer.close(), busy.writer.close()]);
        for (const { chunks, copies } of [held, busy]) {
          chunks.forEach((chunk, i) => assert.deepEqual(chunk, copies[i]));
        }
        const decode = (copies: Uint8Array[]) => {
          const decoder = new FrameDecoder();
          const out: Uint8Array[] = [];
          for (const copy of copies) {
            decoder.push(copy);
            for (let f = decoder.next(); f !== undefined; f = decoder.next()) out.push(f.slice());
          }
          return out;
        };
        assert.deepEqual(decode(busy.copies), frames);
        assert.deepEqual(decode(held.copies), [frames[0], ...frames]);
        // Chunks of small batches are views of a shared slab, not buffers of their own.
        const small = busy.chunks.filter((chunk) => chunk.length <= 256);
        if (small.length >= 2) {
          assert.ok(small.every((chunk) => chunk.buffer.byteLength > chunk.length));
        }
      },
    ),
    { numRuns: 60 },
  );
});

Deno.test("FrameWriter: over a FrameTarget, writeChunk takes the batches, close() ends with closeWrite, a failed write fails the writer", async () => {
  const chunks: Uint8Array[] = [];
  const calls: string[] = [];
  const failing: { error?: Error } = {};
  const failures: TransportClosedError[] = [];
  const writer = new FrameWriter({
    // Synchronous, then asynchronous, then failing.
    writeChunk: (chunk) => {
      if (failing.error !== undefined) return Promise.reject(failing.error);
      chunks.push(chunk.slice());
      return chunks.length === 1 ? undefined : Promise.resolve();
    },
    closeWrite: () => {
      calls.push("closeWrite");
      return Promise.resolve();
    },
    abort: () => {
      calls.push("abort");
      return Promise.resolve();
    },
  }, { onFailure: (error) => failures.push(error) });
  writer.write(new Uint8Array([1]));
  await writer.flush();
  writer.write(new Uint8Array([2, 3]));
  await writer.flush();
  assert.deepEqual(chunks, [encodeFrame(new Uint8Array([1])), encodeFrame(new Uint8Array([2, 3]))]);

  failing.error = new Error("peer gone");
  writer.write(new Uint8Array([4]));
  await assert.rejects(writer.flush(), TransportClosedError);
  assert.equal(failures.length, 1);
  assert.equal(failures[0].cause, failing.error);
  assert.throws(() => writer.write(new Uint8Array([5])), TransportClosedError);
  await writer.abort(new Error("done"));
  assert.deepEqual(calls, ["abort"]);

  const closing = new FrameWriter({
    writeChunk: () => undefined,
    closeWrite: () => {
      calls.push("closeWrite");
      return Promise.resolve();
    },
    abort: () => Promise.resolve(),
  });
  closing.write(new Uint8Array([6]));
  await closing.close();
  assert.deepEqual(calls, ["abort", "closeWrite"]);
});

Deno.test("FrameWriter: abort() over a FrameTarget lets the write in flight finish first, as over a stream", async () => {
  const events: string[] = [];
  const inFlight = Promise.withResolvers<void>();
  const writer = new FrameWriter({
    writeChunk: () => {
      events.push("write");
      return inFlight.promise;
    },
    closeWrite: () => Promise.resolve(),
    abort: () => {
      events.push("abort");
      return Promise.resolve();
    },
  });
  writer.write(new Uint8Array([1]));
  await Promise.resolve(); // the write starts at the end of the microtask turn
  const aborting = writer.abort(new Error("going away"));
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(events, ["write"]);
  inFlight.resolve();
  await aborting;
  assert.deepEqual(events, ["write", "abort"]);
});

/** How many writes FrameWriter's defaults start while 800 bytes of frames are queued. */
const EARLY_WRITES_CODE = `
  import { FrameWriter } from "${new URL("./frame_writer.ts", import.meta.url)}";
  let writes = 0;
  const writer = new FrameWriter({
    writeChunk: () => void writes++,
    closeWrite: () => Promise.resolve(),
    abort: () => Promise.resolve(),
  });
  for (let i = 0; i < 20; i++) writer.write(new Uint8Array(36));
  console.log(writes);
  await writer.close();
`;

Deno.test("FrameWriter: writes early by default on several CPUs, not on one", async (t) => {
  const run = async (pinned: boolean) => {
    const command = pinned ? ["taskset", "-c", "0", Deno.execPath()] : [Deno.execPath()];
    const out = await new Deno.Command(command[0], {
      args: [...command.slice(1), "eval", EARLY_WRITES_CODE],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    assert.equal(out.code, 0);
    return Number(new TextDecoder().decode(out.stdout).trim());
  };
  if (navigator.hardwareConcurrency > 1) {
    assert.equal(await run(false), 1, "the first 520 bytes written before the turn ended");
  }
  const taskset = await new Deno.Command("taskset", {
    args: ["-V"],
    stdout: "null",
    stderr: "null",
  })
    .output().catch(() => undefined);
  if (taskset?.success !== true) {
    console.warn("skipped the one-CPU case: taskset (util-linux) is not installed");
    return;
  }
  await t.step("pinned to one CPU", async () => {
    assert.equal(await run(true), 0, "every frame waits for the turn's end");
  });
});
