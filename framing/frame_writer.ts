/**
 * A synchronous, coalescing frame writer over a byte `WritableStream` (or a transport's
 * `writeChunk`): the write path the channel uses, where one promise per message would cost
 * more than the message.
 *
 * @module
 */

import { TransportClosedError } from "../errors.ts";
import { FRAME_HEADER_BYTES } from "./_header.ts";
import {
  type BatchPacker,
  ContentLengthPacker,
  DEFAULT_MAX_BATCH_BYTES,
  LengthPrefixPacker,
  LinePacker,
} from "./_packer.ts";
import { DEFAULT_MAX_FRAME_BYTES } from "./frame_decoder.ts";
import type { FrameEncoderOptions } from "./frame_encoder_stream.ts";
import { numberOption } from "../_options.ts";

/**
 * The default {@linkcode FrameWriterOptions.highWaterMark}: 1 MiB queued.
 *
 * @example
 * ```ts
 * import { DEFAULT_WRITE_HIGH_WATER_MARK, FrameWriter } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const writer = new FrameWriter(new WritableStream());
 * assert.equal(writer.desiredSize, DEFAULT_WRITE_HIGH_WATER_MARK);
 * await writer.close();
 * ```
 */
export const DEFAULT_WRITE_HIGH_WATER_MARK: number = 1024 * 1024;

/**
 * FrameWriter's default batch bound: a 64 KiB batch and 1 KiB of room, so that a frame with a
 * 64 KiB body (a pipe buffer's worth, a common chunk size), its header and an envelope head
 * is copied into one chunk and reaches the kernel in one `write()`, not a header write and a
 * body write: faster 64 KiB raw echo calls to a stdio worker, with less parent CPU per call
 * (`bench/ab_engine.ts` case `raw64kStdio`).
 */
const WRITER_BATCH_BYTES = DEFAULT_MAX_BATCH_BYTES + 1024;

/**
 * Options for {@linkcode FrameWriter}.
 *
 * @example
 * ```ts
 * import { FrameWriter, type FrameWriterOptions } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const options: FrameWriterOptions = { highWaterMark: 100 };
 * const writer = new FrameWriter(new WritableStream(), options);
 * writer.write(new Uint8Array(196));
 * assert.equal(writer.desiredSize, -100); // 4-byte header + 196, over the mark by 100
 * await writer.ready; // resolves once the frame is written
 * assert.equal(writer.desiredSize, 100);
 * await writer.close();
 * ```
 */
export interface FrameWriterOptions extends FrameEncoderOptions {
  /**
   * Queued bytes at which {@linkcode FrameWriter.desiredSize} reaches zero and
   * {@linkcode FrameWriter.ready} starts waiting. `write` itself never blocks: callers that
   * produce without bound await `ready`.
   *
   * @default {DEFAULT_WRITE_HIGH_WATER_MARK} (1 MiB)
   */
  highWaterMark?: number;
  /**
   * Called once, synchronously, when the writer fails: its byte stream failed (even while
   * idle) or {@linkcode FrameWriter.abort} was called. It gets the error every later call
   * throws, so an owner learns of a failure before its next write; it must not throw.
   */
  onFailure?: (error: TransportClosedError) => void;
  /**
   * The largest chunk small frames are coalesced into, in bytes. A frame whose header and
   * payload together exceed it is written as two chunks, its payload not copied.
   *
   * @default 66560 (64 KiB + 1 KiB: a 64 KiB body goes out with its header in one write)
   */
  maxBatchBytes?: number;
  /**
   * How each frame is delimited: a 4-byte length prefix (conduit's framing), a trailing
   * newline (NDJSON, as {@linkcode NdjsonEncoderStream} writes), or a `Content-Length` header
   * (LSP, as {@linkcode ContentLengthEncoderStream} writes).
   *
   * @default {"length-prefixed"}
   */
  framing?: "length-prefixed" | "ndjson" | "content-length";
  /**
   * Reuse the memory of the chunks written once their write resolved, instead of a fresh
   * buffer per chunk. Only for a byte stream that is done with a chunk once its write
   * resolved, copying what it keeps, as every `Transport`'s `writable` is (a
   * `TransformStream`, which queues the chunk itself, is not).
   *
   * @default {false}
   */
  reuseChunks?: boolean;
}

/**
 * Where a {@linkcode FrameWriter} writes without a `WritableStream`: every `Transport` that
 * has `writeChunk` and `closeWrite` is one (the Unix socket, TCP and stdio transports), and
 * writing to it spares the process loading Deno's Web Streams. With no stream to report a
 * failure while the writer is idle, the writer learns of it at its next write.
 *
 * @example
 * ```ts
 * import { type FrameTarget, FrameWriter } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const chunks: Uint8Array[] = [];
 * const target: FrameTarget = {
 *   writeChunk: (chunk) => void chunks.push(chunk.slice()), // written synchronously
 *   closeWrite: () => Promise.resolve(),
 *   abort: () => Promise.resolve(),
 * };
 * const writer = new FrameWriter(target);
 * writer.write(new Uint8Array([7]));
 * writer.write(new Uint8Array([8, 9]));
 * await writer.close();
 * assert.deepEqual(chunks, [new Uint8Array([0, 0, 0, 1, 7, 0, 0, 0, 2, 8, 9])]);
 * ```
 */
export interface FrameTarget {
  /**
   * Writes all of `chunk`; resolves once written, or returns `undefined` when it was written
   * synchronously. Called again only once the previous call settled.
   */
  writeChunk(chunk: Uint8Array): Promise<void> | undefined;
  /** Ends the bytes: called by {@linkcode FrameWriter.close} once every frame is written. */
  closeWrite(): Promise<void>;
  /** Drops what is pending: called by {@linkcode FrameWriter.abort}. */
  abort(reason?: unknown): Promise<void>;
}

/**
 * Writes length-prefixed frames to a byte stream. {@linkcode write} queues a frame
 * synchronously, with no promise per frame; the frames queued in one turn go out together in
 * one write at the end of the microtask turn (a lone frame is never held back for a timer),
 * or as soon as a whole batch is queued, and frames queued while a write is in flight are
 * coalesced into the next one. {@linkcode writeQueued} starts a write earlier. Each write is
 * at most `maxBatchBytes`, except that a frame larger than that is written without copying
 * its payload.
 *
 * `write` never waits: a producer that can outrun the stream checks
 * {@linkcode desiredSize} or awaits {@linkcode ready}. Once the byte stream fails, every
 * later call throws or rejects with a `TransportClosedError` whose `cause` is the failure.
 *
 * @example Frames written together, decoded on the other side
 * ```ts
 * import { FrameDecoderStream, FrameWriter } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
 * const writer = new FrameWriter(writable);
 * writer.write(new Uint8Array([1]));
 * writer.write(new Uint8Array([2, 3]));
 * const closing = writer.close();
 * const frames = await Array.fromAsync(readable.pipeThrough(new FrameDecoderStream()));
 * await closing;
 * assert.deepEqual(frames, [new Uint8Array([1]), new Uint8Array([2, 3])]);
 * ```
 *
 * @example Respecting backpressure
 * ```ts
 * import { FrameWriter } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * let writes = 0;
 * const sink = new WritableStream<Uint8Array>({ write: () => void writes++ });
 * const writer = new FrameWriter(sink, { highWaterMark: 64 * 1024 });
 * for (let i = 0; i < 10_000; i++) {
 *   if (writer.desiredSize <= 0) await writer.ready;
 *   writer.write(new Uint8Array(60));
 * }
 * await writer.close();
 * assert.ok(writes < 20); // 640 KB in 64 KiB writes, not 10,000 writes
 * ```
 */
export class FrameWriter {
  readonly #writer: ChunkWriter;
  readonly #packer: BatchPacker;
  readonly #highWaterMark: number;
  #scheduled = false;
  #pumping = false;
  #failure: TransportClosedError | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;
  #inFlightBytes = 0;
  /** The write in flight, if it is asynchronous. */
  #writing: Promise<void> | undefined;
  /** The batch the pump is writing, and the index of its next chunk. */
  #chunks: Uint8Array[] = NO_CHUNKS;
  #chunkAt = 0;
  #readyWaiters: Array<() => void> = [];
  /** The flush() calls waiting for the batch in flight, and for the frames still queued. */
  #flushWaiters: Array<() => void> = [];
  #queuedFlushWaiters: Array<() => void> = [];
  readonly #onFailure: ((error: TransportClosedError) => void) | undefined;

  /**
   * Creates a writer that takes the lock of `target`, a byte stream, or writes to a
   * {@linkcode FrameTarget}.
   *
   * @param target The byte stream to write to (the writer holds its lock from now on), or a
   * target such as a transport with `writeChunk`.
   * @param options Batch, frame and queue limits; see {@linkcode FrameWriterOptions}.
   * @throws {RangeError} When an option is out of range.
   * @throws {TypeError} When the stream is already locked.
   */
  constructor(
    target: WritableStream<Uint8Array> | FrameTarget,
    options: FrameWriterOptions = {},
  ) {
    const highWaterMark = options.highWaterMark ?? DEFAULT_WRITE_HIGH_WATER_MARK;
    numberOption("highWaterMark", highWaterMark, 0);
    const Packer = options.framing === "ndjson"
      ? LinePacker
      : options.framing === "content-length"
      ? ContentLengthPacker
      : LengthPrefixPacker;
    this.#packer = new Packer(
      options.maxBatchBytes ?? WRITER_BATCH_BYTES,
      options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
      options.reuseChunks ?? false,
    );
    this.#highWaterMark = highWaterMark;
    this.#onFailure = options.onFailure;
    // Told apart without naming WritableStream: its first use loads Deno's Web Streams.
    if ("getWriter" in target) {
      const writer = target.getWriter();
      // The stream can fail while we are idle (the peer went away): learn it now, so the next
      // write() throws instead of queueing frames that can never be sent.
      writer.closed.catch((error) => this.#fail(failedError(error)));
      this.#writer = writer;
    } else {
      this.#writer = {
        write: (chunk) => target.writeChunk(chunk),
        close: () => target.closeWrite(),
        // As a WritableStream's abort does: the write in flight finishes first (a HELLO in
        // flight still reaches a peer refused during its handshake).
        abort: async (reason) => {
          await this.#writing?.catch(() => {});
          await target.abort(reason);
        },
      };
    }
  }

  /**
   * Bytes that may still be queued before reaching the high-water mark: negative past it,
   * 0 once the writer is closed or failed.
   */
  get desiredSize(): number {
    if (this.#closed || this.#failure !== undefined) return 0;
    return this.#highWaterMark - this.#packer.pendingBytes - this.#inFlightBytes;
  }

  /**
   * The `TransportClosedError` every call throws or rejects with since the byte stream failed
   * or the writer was aborted (the failure is its `cause`); `undefined` until then, and after
   * a plain {@linkcode close}. A write in flight fails it only once its promise settles, so
   * frames queued before then are dropped with the batch.
   *
   * @example
   * ```ts
   * import { TransportClosedError } from "@conduit/ipc/errors";
   * import { FrameWriter } from "@conduit/ipc/framing";
   * import assert from "node:assert/strict";
   *
   * const gone = new Error("peer gone");
   * const writer = new FrameWriter(new WritableStream({ write: () => Promise.reject(gone) }));
   * writer.write(new Uint8Array(8));
   * const known = writer.error; // undefined: the write is still in flight
   * await writer.flush().catch(() => {});
   * assert.equal(known, undefined);
   * assert.ok(writer.error instanceof TransportClosedError);
   * assert.equal(writer.error.cause, gone);
   * assert.throws(() => writer.write(new Uint8Array(8)), writer.error);
   * ```
   */
  get error(): TransportClosedError | undefined {
    return this.#failure;
  }

  /**
   * Queues one frame. Never waits; check {@linkcode desiredSize} or await {@linkcode ready}
   * to respect backpressure.
   *
   * @param payload The frame's payload; owned by the writer from now on (do not modify it).
   * @throws {TransportClosedError} After `close()`/`abort()`, or once the byte stream has
   * failed (the failure is its `cause`).
   * @throws {FrameTooLargeError} When the payload exceeds `maxFrameBytes`; nothing is queued.
   */
  write(payload: Uint8Array): void {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#closed) throw new TransportClosedError("FrameWriter is closed");
    this.#packer.add(payload);
    this.#queued();
  }

  /**
   * Queues one frame whose payload is `head` followed by `body`, without joining them into a
   * new buffer first: both are copied at once into the writer's queue, except a body whose
   * frame exceeds `maxBatchBytes`, which is written as it is. Made for an envelope head
   * before a codec's output. Never waits, like {@linkcode write}.
   *
   * @param head The first bytes of the payload; the caller may reuse it once this returns.
   * @param body The rest of the payload. The caller may reuse it once this returns if the
   * frame fits in `maxBatchBytes` (see {@linkcode keepsBody}); a larger one is written as it
   * is, so keep it unchanged until a {@linkcode flush} called after this resolves.
   * @throws {TransportClosedError} After `close()`/`abort()`, or once the byte stream has
   * failed (the failure is its `cause`).
   * @throws {FrameTooLargeError} When head and body together exceed `maxFrameBytes`; nothing
   * is queued.
   *
   * @example
   * ```ts
   * import { FrameDecoderStream, FrameWriter } from "@conduit/ipc/framing";
   * import assert from "node:assert/strict";
   *
   * const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
   * const writer = new FrameWriter(writable);
   * const head = new Uint8Array([7]);
   * writer.writeParts(head, new Uint8Array([1, 2]));
   * head[0] = 8; // copied already
   * writer.writeParts(head, new Uint8Array([3]));
   * const closing = writer.close();
   * const frames = await Array.fromAsync(readable.pipeThrough(new FrameDecoderStream()));
   * await closing;
   * assert.deepEqual(frames, [new Uint8Array([7, 1, 2]), new Uint8Array([8, 3])]);
   * ```
   */
  writeParts(head: Uint8Array, body: Uint8Array): void {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#closed) throw new TransportClosedError("FrameWriter is closed");
    this.#packer.addParts(head, body);
    this.#queued();
  }

  /**
   * Whether {@linkcode writeParts} keeps the body of a frame of `payloadBytes` (head and body
   * together) by reference, to write it later as it is, rather than copying it at once: true
   * when the frame exceeds `maxBatchBytes`.
   *
   * @param payloadBytes The frame's payload size.
   * @returns True when the writer would own the body until it is written.
   *
   * @example
   * ```ts
   * import { FrameWriter } from "@conduit/ipc/framing";
   * import assert from "node:assert/strict";
   *
   * const writer = new FrameWriter(new WritableStream(), { maxBatchBytes: 1024 });
   * assert.equal(writer.keepsBody(1020), false); // 4-byte header + 1020: one batch
   * assert.equal(writer.keepsBody(1021), true);
   * await writer.close();
   * ```
   */
  keepsBody(payloadBytes: number): boolean {
    return FRAME_HEADER_BYTES + payloadBytes > this.#packer.maxBatchBytes;
  }

  /**
   * Starts writing the queued frames now instead of at the end of the microtask turn, unless
   * a write is in flight already (the queued frames then join the next one). For a producer
   * that queues frames in a long synchronous run: calling it every few frames lets the first
   * ones reach the peer while the run goes on, at the cost of smaller writes.
   *
   * @example
   * ```ts
   * import { FrameWriter } from "@conduit/ipc/framing";
   * import assert from "node:assert/strict";
   *
   * let writes = 0;
   * const writer = new FrameWriter(new WritableStream({ write: () => void writes++ }));
   * await writer.ready; // the stream has started
   * writer.write(new Uint8Array(8));
   * writer.writeQueued();
   * assert.equal(writes, 1); // the stream took the frame before this turn ended
   * await writer.close();
   * ```
   */
  writeQueued(): void {
    if (this.#pumping || this.#failure !== undefined || this.#packer.empty) return;
    this.#pumping = true;
    this.#pump();
  }

  /**
   * Resolves when the queue is below the high-water mark (or empty); rejects with
   * `TransportClosedError` once the byte stream has failed.
   */
  get ready(): Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (this.#belowMark()) return Promise.resolve();
    return this.#wait(this.#readyWaiters);
  }

  /**
   * Resolves once every frame queued so far has been accepted by the byte stream; rejects
   * with `TransportClosedError` if it fails first.
   */
  flush(): Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    // Queued frames go out with the next batch taken; without any, the batch in flight (if
    // any: #inFlightBytes counts down to 0 as its last chunk is written) holds them.
    if (!this.#packer.empty) return this.#wait(this.#queuedFlushWaiters);
    if (this.#inFlightBytes > 0) return this.#wait(this.#flushWaiters);
    return Promise.resolve();
  }

  /**
   * Refuses further writes, flushes the queued frames, then closes the byte stream. Calling
   * it again returns the same promise.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  /**
   * Drops the queued frames and aborts the byte stream; later calls fail with a
   * `TransportClosedError` whose `cause` is `reason`.
   */
  async abort(reason?: unknown): Promise<void> {
    this.#closed = true;
    this.#packer.clear();
    this.#fail(new TransportClosedError("FrameWriter was aborted", { cause: reason }));
    await this.#writer.abort(reason).catch(() => {});
  }

  async #close(): Promise<void> {
    this.#closed = true;
    await this.flush();
    try {
      await this.#writer.close();
    } catch (error) {
      this.#fail(failedError(error));
      throw this.#failure;
    }
    // Every frame is written and none can follow: the memory kept for batches is freed now.
    this.#packer.clear();
  }

  #belowMark(): boolean {
    return this.desiredSize > 0 || (this.#packer.empty && this.#inFlightBytes === 0);
  }

  #wait(waiters: Array<() => void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      waiters.push(() => this.#failure !== undefined ? reject(this.#failure) : resolve());
    });
  }

  /** Starts the pump: now once a whole batch waits, else at the end of the microtask turn. */
  #queued(): void {
    if (this.#pumping) return;
    if (this.#packer.pendingBytes >= this.#packer.maxBatchBytes) this.writeQueued();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(this.#startPump);
    }
  }

  readonly #startPump = (): void => {
    this.#scheduled = false;
    if (this.#failure !== undefined || this.#pumping || this.#packer.empty) return;
    this.#pumping = true;
    this.#pump();
  };

  /**
   * Writes the queued batches, one chunk at a time, until the queue is empty: a state machine
   * driven by the writes' settlements rather than an async function, whose frame and awaits
   * cost an allocation per batch, and a small call writes one batch per side.
   */
  #pump(): void {
    const packer = this.#packer;
    try {
      while (true) {
        const chunks = this.#chunks;
        if (this.#chunkAt === chunks.length) {
          if (chunks !== NO_CHUNKS) {
            // The batch is written: wake the flush() calls it held, then let the frames
            // queued by the continuations of this write join the next batch.
            this.#chunks = NO_CHUNKS;
            this.#chunkAt = 0;
            if (this.#flushWaiters.length > 0) wakeAll(this.#flushWaiters.splice(0));
            queueMicrotask(this.#nextBatch);
            return;
          }
          if (packer.empty || this.#failure !== undefined) return this.#stopPump();
          this.#inFlightBytes = packer.pendingBytes;
          this.#chunks = packer.take();
          // The frames the queued flush() calls wait for are in this batch now (and the
          // waiters of the batch before were woken once it was written).
          const inBatch = this.#queuedFlushWaiters;
          this.#queuedFlushWaiters = this.#flushWaiters;
          this.#flushWaiters = inBatch;
          continue;
        }
        const writing = this.#writer.write(chunks[this.#chunkAt]);
        if (writing !== undefined) {
          this.#writing = writing;
          writing.then(this.#chunkWritten, this.#writeFailed);
          return;
        }
        this.#countWritten();
      }
    } catch (error) {
      this.#writeFailed(error);
    }
  }

  readonly #nextBatch = (): void => this.#pump();

  readonly #chunkWritten = (): void => {
    this.#writing = undefined;
    this.#countWritten();
    this.#pump();
  };

  readonly #writeFailed = (error: unknown): void => {
    this.#fail(failedError(error));
    this.#stopPump();
  };

  /** The chunk at #chunkAt was written. */
  #countWritten(): void {
    this.#inFlightBytes -= this.#chunks[this.#chunkAt++].length;
    if (this.#readyWaiters.length > 0 && this.#belowMark()) {
      wakeAll(this.#readyWaiters.splice(0));
    }
  }

  #stopPump(): void {
    this.#pumping = false;
    this.#writing = undefined;
    this.#inFlightBytes = 0;
    this.#chunks = NO_CHUNKS;
    this.#chunkAt = 0;
    if (this.#readyWaiters.length > 0) wakeAll(this.#readyWaiters.splice(0));
  }

  #fail(error: TransportClosedError): void {
    if (this.#failure !== undefined) return;
    this.#failure = error;
    this.#packer.clear();
    wakeAll(this.#readyWaiters.splice(0));
    wakeAll(this.#flushWaiters.splice(0));
    wakeAll(this.#queuedFlushWaiters.splice(0));
    this.#onFailure?.(error);
  }
}

/** What the writer needs of its byte stream's writer, or of its target. */
interface ChunkWriter {
  /** Resolves once written; `undefined` when written synchronously. */
  write(chunk: Uint8Array): Promise<void> | undefined;
  close(): Promise<void>;
  abort(reason?: unknown): Promise<void>;
}

const NO_CHUNKS: Uint8Array[] = [];

function failedError(cause: unknown): TransportClosedError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new TransportClosedError(`FrameWriter's byte stream failed: ${detail}`, { cause });
}

function wakeAll(waiters: Array<() => void>): void {
  for (const wake of waiters) wake();
}
