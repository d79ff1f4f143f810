/**
 * A synchronous, coalescing frame writer over a byte `WritableStream` (or a transport's
 * `writeChunk`): the write path the channel uses, where one promise per message would cost
 * more than the message.
 *
 * @module
 */

import { TransportClosedError } from "../errors.ts";
import {
  type BatchPacker,
  ContentLengthPacker,
  DEFAULT_MAX_BATCH_BYTES,
  FRAME_HEADER_BYTES,
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
 * FrameWriter's default {@linkcode FrameWriterOptions.firstWriteBytes}: about a dozen small
 * calls where the process may run on more than one CPU. On one CPU the peer cannot work
 * while this side does, and an early write would only add a write and a switch.
 */
const FIRST_WRITE_BYTES = (globalThis.navigator?.hardwareConcurrency ?? 1) > 1 ? 512 : Infinity;

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
   * Queued bytes at which an idle writer writes at once rather than at the end of the
   * microtask turn. The peer starts on the first frames of a burst (32 pipelined calls, a
   * loop of notifications) while this side queues the rest, which wait for that write and go
   * out together: both processes work at the same time instead of in turn. A turn that
   * queues less is still written once, at its end.
   *
   * @default 512 where `navigator.hardwareConcurrency` is above 1, else a whole batch
   * (`maxBatchBytes`)
   */
  firstWriteBytes?: number;
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
 * or as soon as `firstWriteBytes` are queued, and frames queued while a write is in flight
 * are coalesced into the next one. {@linkcode writeQueued} starts a write earlier. Each write is
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
  /** Queued bytes at which an idle writer writes at once: firstWriteBytes, at most a batch. */
  readonly #firstWriteBytes: number;
  readonly #onFailure: ((error: TransportClosedError) => void) | undefined;
  /** Where the writer is in its life: OPEN, CLOSED (by close() or abort()) or FAILED. */
  #state: WriterState = OPEN;
  /** What every call throws or rejects with once FAILED. */
  #failure: TransportClosedError | undefined;
  #closing: Promise<void> | undefined;
  /** Whether batches are being written: IDLE, SCHEDULED (at the turn's end) or PUMPING. */
  #pumpState: PumpState = IDLE;
  /** The batch the pump is writing. */
  readonly #batch = new BatchInFlight();
  /** The promises of ready and flush() not yet settled. */
  readonly #waiters = new Waiters();

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
    const firstWriteBytes = options.firstWriteBytes ?? FIRST_WRITE_BYTES;
    numberOption("firstWriteBytes", firstWriteBytes, 0);
    // A whole batch is written at once whatever the option says.
    this.#firstWriteBytes = Math.min(firstWriteBytes, this.#packer.maxBatchBytes);
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
          await this.#batch.writing?.catch(() => {});
          await target.abort(reason);
        },
      };
    }
  }

  /** Bytes written to the target so far, frame headers included. */
  get bytesWritten(): number {
    return this.#batch.written;
  }

  /**
   * Bytes that may still be queued before reaching the high-water mark: negative past it,
   * 0 once the writer is closed or failed.
   */
  get desiredSize(): number {
    if (this.#state !== OPEN) return 0;
    return this.#highWaterMark - this.#packer.pendingBytes - this.#batch.bytes;
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
    if (this.#state !== OPEN) throw this.#refusal();
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
    if (this.#state !== OPEN) throw this.#refusal();
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
    if (this.#pumpState === PUMPING || this.#state === FAILED || this.#packer.empty) return;
    this.#pumpState = PUMPING;
    this.#pump();
  }

  /**
   * Resolves when the queue is below the high-water mark (or empty); rejects with
   * `TransportClosedError` once the byte stream has failed.
   */
  get ready(): Promise<void> {
    if (this.#state === FAILED) return Promise.reject(this.#failure);
    if (this.#belowMark()) return Promise.resolve();
    return this.#wait(this.#waiters.ready);
  }

  /**
   * Resolves once every frame queued so far has been accepted by the byte stream; rejects
   * with `TransportClosedError` if it fails first.
   */
  flush(): Promise<void> {
    if (this.#state === FAILED) return Promise.reject(this.#failure);
    // Queued frames go out with the next batch taken; without any, the batch in flight (if
    // any: its bytes count down to 0 as its last chunk is written) holds them.
    if (!this.#packer.empty) return this.#wait(this.#waiters.queued);
    if (this.#batch.bytes > 0) return this.#wait(this.#waiters.inFlight);
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
    this.#packer.clear();
    this.#fail(new TransportClosedError("FrameWriter was aborted", { cause: reason }));
    await this.#writer.abort(reason).catch(() => {});
  }

  async #close(): Promise<void> {
    if (this.#state === OPEN) this.#state = CLOSED;
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
    return this.desiredSize > 0 || (this.#packer.empty && this.#batch.bytes === 0);
  }

  /** What write() throws once the writer is not OPEN. */
  #refusal(): TransportClosedError {
    return this.#failure ?? new TransportClosedError("FrameWriter is closed");
  }

  #wait(waiters: Array<() => void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      waiters.push(() => this.#state === FAILED ? reject(this.#failure) : resolve());
    });
  }

  /** Starts the pump: now once firstWriteBytes wait, else at the end of the microtask turn. */
  #queued(): void {
    const pumpState = this.#pumpState;
    if (pumpState === PUMPING) return;
    if (this.#packer.pendingBytes >= this.#firstWriteBytes) this.writeQueued();
    else if (pumpState === IDLE) {
      this.#pumpState = SCHEDULED;
      queueMicrotask(this.#startPump);
    }
  }

  readonly #startPump = (): void => {
    // A microtask queued before writeQueued() started the pump finds it PUMPING, or IDLE
    // once it stopped: either way it has nothing to do.
    if (this.#pumpState !== SCHEDULED) return;
    if (this.#state === FAILED || this.#packer.empty) {
      this.#pumpState = IDLE;
      return;
    }
    this.#pumpState = PUMPING;
    this.#pump();
  };

  /**
   * Writes the queued batches, one chunk at a time, until the queue is empty: a state machine
   * driven by the writes' settlements rather than an async function, whose frame and awaits
   * cost an allocation per batch, and a small call writes one batch per side.
   */
  #pump(): void {
    const packer = this.#packer;
    const batch = this.#batch;
    try {
      while (true) {
        const chunks = batch.chunks;
        if (batch.at === chunks.length) {
          if (chunks !== NO_CHUNKS) {
            // The batch is written: wake the flush() calls it held, then let the frames
            // queued by the continuations of this write join the next batch.
            batch.clear();
            this.#waiters.batchWritten();
            queueMicrotask(this.#nextBatch);
            return;
          }
          if (packer.empty || this.#state === FAILED) return this.#stopPump();
          batch.bytes = packer.pendingBytes;
          batch.chunks = packer.take();
          this.#waiters.batchTaken();
          continue;
        }
        const writing = this.#writer.write(chunks[batch.at]);
        if (writing !== undefined) {
          batch.writing = writing;
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
    this.#batch.writing = undefined;
    this.#countWritten();
    this.#pump();
  };

  readonly #writeFailed = (error: unknown): void => {
    this.#fail(failedError(error));
    this.#stopPump();
  };

  /** The batch's next chunk was written. */
  #countWritten(): void {
    const batch = this.#batch;
    const bytes = batch.chunks[batch.at++].length;
    batch.bytes -= bytes;
    batch.written += bytes;
    if (this.#waiters.ready.length > 0 && this.#belowMark()) this.#waiters.wakeReady();
  }

  #stopPump(): void {
    this.#pumpState = IDLE;
    this.#batch.clear();
    this.#waiters.wakeReady();
  }

  #fail(error: TransportClosedError): void {
    if (this.#state === FAILED) return;
    this.#state = FAILED;
    this.#failure = error;
    this.#packer.clear();
    this.#waiters.wakeEveryone();
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

/** FrameWriter's lifecycle: OPEN, then CLOSED by close() or abort(); FAILED overrides both. */
type WriterState = typeof OPEN | typeof CLOSED | typeof FAILED;
const OPEN = 0;
const CLOSED = 1;
const FAILED = 2;

/**
 * FrameWriter's pump: IDLE, SCHEDULED to start at the end of the microtask turn, or PUMPING
 * (writing batches until the queue is empty).
 */
type PumpState = typeof IDLE | typeof SCHEDULED | typeof PUMPING;
const IDLE = 0;
const SCHEDULED = 1;
const PUMPING = 2;

const NO_CHUNKS: Uint8Array[] = [];

/** The batch FrameWriter's pump is writing, one chunk at a time. */
class BatchInFlight {
  /** The batch's chunks, NO_CHUNKS between batches. */
  chunks: Uint8Array[] = NO_CHUNKS;
  /** The index of the next chunk to write. */
  at = 0;
  /** Bytes not written yet: 0 once the last chunk is. */
  bytes = 0;
  /** Bytes written by every batch so far. */
  written = 0;
  /** The write in flight, if it is asynchronous. */
  writing: Promise<void> | undefined = undefined;

  clear(): void {
    this.chunks = NO_CHUNKS;
    this.at = 0;
    this.bytes = 0;
    this.writing = undefined;
  }
}

/**
 * The callers FrameWriter keeps waiting: `ready` until the queue is below the mark, `flush()`
 * until the frames queued so far are written. A batch taken moves the flush() calls waiting
 * for queued frames to waiting for the batch in flight.
 */
class Waiters {
  ready: Array<() => void> = [];
  /** flush() calls waiting for the batch in flight. */
  inFlight: Array<() => void> = [];
  /** flush() calls waiting for frames still queued. */
  queued: Array<() => void> = [];

  /** A batch was taken: the frames the queued flush() calls wait for are in it now. */
  batchTaken(): void {
    // The waiters of the batch before were woken once it was written: reuse their array.
    const empty = this.inFlight;
    this.inFlight = this.queued;
    this.queued = empty;
  }

  batchWritten(): void {
    if (this.inFlight.length > 0) wakeAll(this.inFlight.splice(0));
  }

  wakeReady(): void {
    if (this.ready.length > 0) wakeAll(this.ready.splice(0));
  }

  /** The writer failed: every waiter settles (and rejects). */
  wakeEveryone(): void {
    this.wakeReady();
    wakeAll(this.inFlight.splice(0));
    wakeAll(this.queued.splice(0));
  }
}

function failedError(cause: unknown): TransportClosedError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new TransportClosedError(`FrameWriter's byte stream failed: ${detail}`, { cause });
}

function wakeAll(waiters: Array<() => void>): void {
  for (const wake of waiters) wake();
}
