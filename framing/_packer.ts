// Coalesces queued frames into few, large chunks. Shared by every encoder (length-prefixed,
// NDJSON, Content-Length) and by FrameWriter, so all of them write frames the same way. Also
// the length-prefix header shared by the frame decoder, encoders and writer, and the byte
// search of the line framings.

import { FrameSyntaxError, FrameTooLargeError } from "../errors.ts";
import { integerOption } from "../_options.ts";

/**
 * Bytes in a length-prefixed frame's header: the payload length as an unsigned 32-bit
 * big-endian integer.
 *
 * @example
 * ```ts
 * import { encodeFrame, FRAME_HEADER_BYTES } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * assert.equal(encodeFrame(new Uint8Array(10)).length, FRAME_HEADER_BYTES + 10);
 * ```
 */
export const FRAME_HEADER_BYTES = 4;

/**
 * The default `maxBatchBytes`, the bound on one coalesced chunk: 64 KiB.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_BATCH_BYTES } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_MAX_BATCH_BYTES, 65536);
 * ```
 */
export const DEFAULT_MAX_BATCH_BYTES: number = 64 * 1024;

/** The largest payload a 4-byte header can announce. */
export const MAX_HEADER_LENGTH = 0xffff_ffff;

const EMPTY_CHUNKS: Uint8Array[] = [];

/**
 * Frames queued for writing. `take()` turns them into chunks: runs of small frames copied
 * into one exactly-sized buffer of at most `maxBatchBytes`, and each frame whose encoding
 * exceeds `maxBatchBytes` passed on uncopied as its own chunk, its header ending the chunk
 * before it and its trailer (if the format has one) starting the chunk after it.
 *
 * Subclasses say how a frame is wrapped: a header computed from the payload's length, and a
 * trailer of fixed bytes.
 *
 * With `reuseChunks` the packer owns the memory of the chunks it returns and reuses it from
 * the next `take()` on: for a writer that calls `take()` only once every chunk of the last one
 * was written, and a sink that copies what it keeps (every transport does). A fresh chunk is
 * a zeroed allocation, a large share of the CPU of 64 KiB echo calls without reused chunks
 * (`deno run -A --cpu-prof bench/ab_engine.ts --case raw64k <dir>`).
 * Small chunks are views of a slab shared by the thread's packers instead (see
 * {@linkcode carve}).
 */
export abstract class BatchPacker {
  readonly maxBatchBytes: number;
  readonly maxFrameBytes: number;
  // The queue's arrays are reused from batch to batch (#count is their length): growing new
  // ones for every batch was most of what a burst of small frames allocated.
  #frames: Uint8Array[] = [];
  #count = 0;
  #bytes = 0;
  // What addParts() encoded at once, frame after frame, in #staged: the header and head, and
  // the body and trailer too when the frame fits in a batch. #stagedEnds[i] is where frame
  // i's staged bytes end (they start where frame i-1's end, and frames queued by reference
  // stage none); #frames[i] is the rest of its payload, by reference.
  // Why: allocating a buffer costs far more than copying a few hundred bytes, whatever its
  // size (`bench/ab_engine.ts` case `notify`), so a frame made of an envelope head and
  // a codec's body is queued without a buffer of its own, the caller may reuse both, and a
  // run of staged frames reaches its chunk in one copy.
  #staged: Uint8Array = EMPTY;
  #stagedBytes = 0;
  #stagedEnds: number[] = [];
  /** The chunks' and copies' memory, with `reuseChunks`. */
  readonly #pool: ChunkPool | undefined;

  constructor(maxBatchBytes: number, maxFrameBytes: number, reuseChunks = false) {
    // 64 bytes hold any header on its own, so no chunk but a passed-through payload ever
    // exceeds the bound.
    this.maxBatchBytes = integerOption("maxBatchBytes", maxBatchBytes, 64);
    this.maxFrameBytes = integerOption(this.limitName, maxFrameBytes, 0, MAX_HEADER_LENGTH);
    this.#pool = reuseChunks ? new ChunkPool(this.maxBatchBytes) : undefined;
  }

  /** Encoded bytes (headers, payloads, trailers) queued and not yet taken. */
  get pendingBytes(): number {
    return this.#bytes;
  }

  get empty(): boolean {
    return this.#count === 0;
  }

  /** The name of the option that sets `maxFrameBytes`, for error messages. */
  protected get limitName(): string {
    return "maxFrameBytes";
  }
  /** Header bytes the format puts before a payload of `length` bytes. */
  protected abstract headerBytes(length: number): number;
  /** Writes the header of a payload of `length` bytes at `offset`. */
  protected abstract writeHeader(target: Uint8Array, offset: number, length: number): void;
  /** Trailer bytes the format puts after every payload. */
  protected abstract readonly trailer: Uint8Array;
  /** Throws a `FramingError` if the format cannot carry `payload`. */
  protected validate(_payload: Uint8Array): void {}

  /**
   * Throws `FrameTooLargeError` past `maxFrameBytes`, or the format's error for a payload it
   * cannot carry.
   */
  check(payload: Uint8Array): void {
    this.#checkLength(payload.length);
    this.validate(payload);
  }

  /**
   * Whether queuing `payload` would take a non-empty batch past `maxBatchBytes`. A frame too
   * large for any batch counts only its header, since its payload is passed on uncopied.
   */
  overflows(payload: Uint8Array): boolean {
    if (this.#bytes === 0) return false;
    const length = payload.length;
    const header = this.headerBytes(length);
    const max = this.maxBatchBytes;
    const need = header + length + this.trailer.length;
    return this.#bytes + (need > max ? header : need) > max;
  }

  /** Queues one frame after {@linkcode check}ing it; nothing is queued if that throws. */
  add(payload: Uint8Array): void {
    this.check(payload);
    this.enqueue(payload);
  }

  /**
   * Queues one frame whose payload is `head` followed by `body`, checked as one payload.
   * Both are copied at once, except a body too large for any batch, which is kept (uncopied)
   * until taken.
   */
  addParts(head: Uint8Array, body: Uint8Array): void {
    const length = head.length + body.length;
    const header = this.headerBytes(length);
    const trailerBytes = this.trailer.length;
    // A head that cannot share a chunk with its own header would break the chunk bound.
    if (header + head.length + trailerBytes > this.maxBatchBytes) {
      const payload = new Uint8Array(length);
      payload.set(head);
      payload.set(body, head.length);
      return this.add(payload);
    }
    this.#checkLength(length);
    this.validate(head);
    this.validate(body);
    const whole = header + length + trailerBytes <= this.maxBatchBytes;
    this.#stage(length, head, whole ? body : undefined);
    this.#frames[this.#count++] = whole ? EMPTY : body;
    this.#bytes += header + length + trailerBytes;
  }

  /** Queues one frame that {@linkcode check} has accepted. */
  enqueue(payload: Uint8Array): void {
    this.#stagedEnds[this.#count] = this.#stagedBytes;
    this.#frames[this.#count++] = payload;
    this.#bytes += this.headerBytes(payload.length) + payload.length + this.trailer.length;
  }

  /** Drops every queued frame, and frees the memory kept for later batches. */
  clear(): void {
    // Chunks handed out may still be in a write that is being abandoned: never reuse them.
    this.#pool?.clear();
    // Staged bytes are copied into chunks, never handed out: the staging buffer is ours alone,
    // and freeing it now rather than at a full garbage collection keeps a server under
    // connection churn from piling such buffers up.
    if (this.#staged !== EMPTY) free(this.#staged);
    this.#staged = EMPTY;
    this.#frames = [];
    this.#stagedEnds = [];
    this.#count = 0;
    this.#stagedBytes = 0;
    this.#bytes = 0;
  }

  /** Removes every queued frame and returns the chunks to write, in order. */
  take(): Uint8Array[] {
    const frames = this.#frames;
    const count = this.#count;
    if (count === 0) return EMPTY_CHUNKS;
    // The last take()'s chunks are written: their memory serves this one.
    this.#pool?.taken();
    const staged = this.#staged;
    const stagedEnds = this.#stagedEnds;
    this.#count = 0;
    this.#stagedBytes = 0;
    this.#bytes = 0;
    const max = this.maxBatchBytes;
    const trailer = this.trailer;
    const trailerBytes = trailer.length;
    const chunks: Uint8Array[] = [];
    // Trailer bytes owed at the start of the next chunk, after a payload passed uncopied.
    let carry = 0;
    let i = 0;
    while (i < count || carry > 0) {
      let runBytes = carry;
      let j = i;
      while (j < count) {
        const need = this.#frameBytes(frames, stagedEnds, j);
        if (runBytes + need > max) break;
        runBytes += need;
        j++;
      }
      // A frame too large for any chunk: its header and staged head end a chunk, the rest
      // is passed on uncopied.
      let large: Uint8Array | undefined;
      let largeHead = 0;
      if (j < count && this.#frameBytes(frames, stagedEnds, j) > max) {
        large = frames[j];
        largeHead = stagedBytesOf(stagedEnds, j) || this.headerBytes(frames[j].length);
      }
      const headJoinsRun = large !== undefined && runBytes + largeHead <= max;
      const chunkBytes = runBytes + (headJoinsRun ? largeHead : 0);
      if (chunkBytes > 0) {
        const chunk = this.#chunk(chunkBytes, !headJoinsRun);
        if (carry > 0) chunk.set(trailer, 0);
        const offset = this.#copyFrames(chunk, carry, i, j);
        if (headJoinsRun) this.#writeHead(chunk, offset, staged, stagedEnds, j, large!);
        chunks.push(chunk);
      }
      carry = 0;
      if (large !== undefined) {
        if (!headJoinsRun && largeHead > 0) {
          const head = this.#chunk(largeHead, false);
          this.#writeHead(head, 0, staged, stagedEnds, j, large);
          chunks.push(head);
        }
        if (large.length > 0) chunks.push(large);
        carry = trailerBytes;
        j++;
      }
      i = j;
    }
    // A burst may have grown the staging buffer far past what the usual batch needs.
    if (staged.length > MAX_KEPT_STAGING_BYTES) this.#staged = EMPTY;
    // The chunks hold the payloads now; keep the arrays, not what they referred to.
    if (count > MAX_KEPT_QUEUE_LENGTH) {
      this.#frames = [];
      this.#stagedEnds = [];
    } else frames.fill(EMPTY, 0, count);
    return chunks;
  }

  /**
   * Copies frames `i` to `j` (exclusive), each small enough for a chunk, into `chunk` from
   * `offset`, and returns where they end. Staged frames are whole in `staged` and consecutive
   * there: each run of them is copied at once.
   */
  #copyFrames(chunk: Uint8Array, offset: number, i: number, j: number): number {
    const frames = this.#frames;
    const staged = this.#staged;
    const stagedEnds = this.#stagedEnds;
    const trailer = this.trailer;
    let runStart = -1;
    let runEnd = -1;
    for (let k = i; k < j; k++) {
      const start = k === 0 ? 0 : stagedEnds[k - 1];
      if (stagedEnds[k] > start) {
        if (runStart < 0) runStart = start;
        runEnd = stagedEnds[k];
        continue;
      }
      if (runStart >= 0) {
        chunk.set(staged.subarray(runStart, runEnd), offset);
        offset += runEnd - runStart;
        runStart = -1;
      }
      const frame = frames[k];
      this.writeHeader(chunk, offset, frame.length);
      offset += this.headerBytes(frame.length);
      copyInto(chunk, offset, frame);
      offset += frame.length;
      if (trailer.length > 0) {
        chunk.set(trailer, offset);
        offset += trailer.length;
      }
    }
    if (runStart >= 0) {
      chunk.set(staged.subarray(runStart, runEnd), offset);
      offset += runEnd - runStart;
    }
    return offset;
  }

  /**
   * Frame k's whole encoding (methods, not closures in take(): those were allocated per take).
   * A frame staged whole (nothing left by reference, where a staged head always leaves a
   * non-empty body) has its trailer staged already.
   */
  #frameBytes(frames: Uint8Array[], stagedEnds: number[], k: number): number {
    const length = frames[k].length;
    const staged = stagedBytesOf(stagedEnds, k);
    if (staged > 0 && length === 0) return staged;
    return (staged || this.headerBytes(length)) + length + this.trailer.length;
  }

  /**
   * A chunk of `bytes`. One that holds a large frame's header is never `carvable`: carved,
   * it made 1 MiB raw calls slower in A/B runs (bench/ab_engine.ts case raw1m; no slower
   * under perf, nor in syscall counts: not understood).
   */
  #chunk(bytes: number, carvable: boolean): Uint8Array {
    if (this.#pool === undefined) return new Uint8Array(bytes);
    if (carvable && bytes <= CARVED_CHUNK_BYTES) return carve(bytes);
    if (bytes <= SMALL_CHUNK_BYTES) return new Uint8Array(bytes);
    return this.#pool.chunk(bytes);
  }

  #checkLength(length: number): void {
    if (length > this.maxFrameBytes) {
      throw new FrameTooLargeError(length, this.maxFrameBytes, { limitName: this.limitName });
    }
  }

  /**
   * Stages the header of a `length`-byte payload and its `head`, then `body` and the trailer
   * when given (the whole frame), at the end of #staged.
   */
  #stage(length: number, head: Uint8Array, body: Uint8Array | undefined): void {
    const header = this.headerBytes(length);
    let offset = this.#stagedBytes;
    const end = offset + header + head.length +
      (body === undefined ? 0 : body.length + this.trailer.length);
    if (end > this.#staged.length) {
      const grown = new Uint8Array(Math.max(MIN_STAGING_BYTES, end * 2));
      grown.set(this.#staged.subarray(0, offset));
      this.#staged = grown;
    }
    const staged = this.#staged;
    this.writeHeader(staged, offset, length);
    offset += header;
    copyInto(staged, offset, head);
    if (body !== undefined) {
      copyInto(staged, offset + head.length, body);
      copyInto(staged, offset + head.length + body.length, this.trailer);
    }
    this.#stagedBytes = end;
    this.#stagedEnds[this.#count] = end;
  }

  /** Writes what comes before `rest`, the uncopied part of large frame `k`, at `offset`. */
  #writeHead(
    target: Uint8Array,
    offset: number,
    staged: Uint8Array,
    stagedEnds: number[],
    k: number,
    rest: Uint8Array,
  ): void {
    const start = k === 0 ? 0 : stagedEnds[k - 1];
    const end = stagedEnds[k];
    if (end > start) target.set(staged.subarray(start, end), offset);
    else this.writeHeader(target, offset, rest.length);
  }
}

/**
 * Chunks up to this size are allocated, not pooled: zeroing them costs little, and pooled views
 * cost 256-in-flight small calls and 1 MiB calls (whose large frames' headers are such chunks)
 * CPU in A/B runs (bench/ab_engine.ts cases calls256, raw1m).
 */
const SMALL_CHUNK_BYTES = 32 * 1024;
/**
 * Chunks up to this size (with `reuseChunks`) are carved from a slab: a small call's whole
 * batch is one. An ArrayBuffer of its own costs the same whatever its size, and a typed
 * array of 64 bytes or less lives on V8's heap, which the write's op must first move to a
 * backing store of its own (the report's "Closer to the machine" small raw calls,
 * bench/report/_machine.ts case conduit-small).
 */
const CARVED_CHUNK_BYTES = 1024;
/**
 * The slab's size. A stalled write pins at most one slab (its chunk's), whatever the slab's
 * other chunks were: with many connections that never read, each pins at most this much.
 */
const SLAB_BYTES = 8 * 1024;
/** The slab chunks are carved from, shared by every packer of this thread. */
let slab = new ArrayBuffer(0);
let slabAt = 0;

/**
 * A chunk of `bytes` (at most {@linkcode CARVED_CHUNK_BYTES}) carved from the slab. Slab
 * memory is never reused (a full slab is dropped for a fresh one and lives on only through
 * the chunks that refer to it), so a chunk stays valid however long its write takes, and
 * every packer of the thread can share one slab.
 */
function carve(bytes: number): Uint8Array {
  if (slabAt + bytes > slab.byteLength) {
    slab = new ArrayBuffer(SLAB_BYTES);
    slabAt = 0;
  }
  const chunk = new Uint8Array(slab, slabAt, bytes);
  slabAt += (bytes + 7) & ~7;
  return chunk;
}

/** The most buffers a {@linkcode ChunkPool} keeps for reuse. */
const MAX_POOLED_CHUNKS = 8;

/**
 * The memory of a packer that reuses its chunks: buffers of `maxBatchBytes`, each serving
 * again once the take() after the one that handed it out begins.
 */
class ChunkPool {
  readonly #chunkBytes: number;
  #free: ArrayBuffer[] = [];
  /** What the take() under way (or else the last one) handed out. */
  #lent: ArrayBuffer[] = [];

  constructor(maxBatchBytes: number) {
    this.#chunkBytes = maxBatchBytes;
  }

  /** A chunk of `bytes` (at most a batch) for the take() under way. */
  chunk(bytes: number): Uint8Array {
    const buffer = this.#free.pop() ?? new ArrayBuffer(this.#chunkBytes);
    this.#lent.push(buffer);
    return new Uint8Array(buffer, 0, bytes);
  }

  /** A take() begins: what the last one handed out is written, so free. */
  taken(): void {
    const free = this.#free;
    for (const buffer of this.#lent) if (free.length < MAX_POOLED_CHUNKS) free.push(buffer);
    this.#lent.length = 0;
  }

  /** Drops every buffer: frees those no write holds; the lent ones may still be written. */
  clear(): void {
    for (const buffer of this.#free) buffer.transfer(0);
    this.#free = [];
    this.#lent = [];
  }
}

const EMPTY = new Uint8Array(0);
/**
 * The first size of the staging buffer: a few small frames. It doubles as batches need, so a
 * connection that sends small frames holds no more than that.
 */
const MIN_STAGING_BYTES = 1024;
/** Queue arrays longer than this are dropped once emptied. */
const MAX_KEPT_QUEUE_LENGTH = 16 * 1024;
/** A staging buffer larger than this is dropped once emptied. */
const MAX_KEPT_STAGING_BYTES = 1024 * 1024;

// `TypedArray.prototype.set` has a fixed cost that dominates for tiny payloads.
/** Frame k's staged bytes (header included), 0 when it was queued by reference. */
function stagedBytesOf(stagedEnds: number[], k: number): number {
  return stagedEnds[k] - (k === 0 ? 0 : stagedEnds[k - 1]);
}

/** Frees `bytes`' memory now (detaching every view of it), rather than at a garbage collection. */
function free(bytes: Uint8Array): void {
  (bytes.buffer as ArrayBuffer).transfer(0);
}

function copyInto(target: Uint8Array, offset: number, source: Uint8Array): void {
  const length = source.length;
  if (length > 32) {
    target.set(source, offset);
    return;
  }
  for (let i = 0; i < length; i++) target[offset + i] = source[i];
}

const NO_TRAILER = new Uint8Array(0);

/** Length-prefixed frames: a 4-byte big-endian length, then the payload. */
export class LengthPrefixPacker extends BatchPacker {
  protected readonly trailer: Uint8Array = NO_TRAILER;
  protected headerBytes(): number {
    return FRAME_HEADER_BYTES;
  }
  protected writeHeader(target: Uint8Array, offset: number, length: number): void {
    writeLength(target, offset, length);
  }
}

const NEWLINE = 0x0a;
const LINE_TRAILER = new Uint8Array([NEWLINE]);

/** Newline-delimited frames: the payload, then `\n`. A payload holding `\n` is refused. */
export class LinePacker extends BatchPacker {
  protected readonly trailer: Uint8Array = LINE_TRAILER;
  protected override get limitName(): string {
    return "maxLineBytes";
  }
  protected headerBytes(): number {
    return 0;
  }
  protected writeHeader(): void {}
  protected override validate(payload: Uint8Array): void {
    const at = findByte(payload, NEWLINE);
    if (at !== -1) {
      throw new FrameSyntaxError(
        `NDJSON payload holds a newline at byte ${at} of ${payload.length}; encode it as one line`,
      );
    }
  }
}

const CONTENT_LENGTH_PREFIX = "Content-Length: ";

/** LSP-style frames: `Content-Length: N\r\n\r\n`, then the payload. */
export class ContentLengthPacker extends BatchPacker {
  protected readonly trailer: Uint8Array = NO_TRAILER;
  protected headerBytes(length: number): number {
    return CONTENT_LENGTH_PREFIX.length + decimalDigits(length) + 4;
  }
  protected writeHeader(target: Uint8Array, offset: number, length: number): void {
    writeContentLengthHeader(target, offset, length);
  }
}

/** Writes `Content-Length: <length>\r\n\r\n` at `offset`; returns the offset after it. */
export function writeContentLengthHeader(
  target: Uint8Array,
  offset: number,
  length: number,
): number {
  for (let i = 0; i < CONTENT_LENGTH_PREFIX.length; i++) {
    target[offset++] = CONTENT_LENGTH_PREFIX.charCodeAt(i);
  }
  const digits = decimalDigits(length);
  for (let i = digits - 1, rest = length; i >= 0; i--, rest = Math.floor(rest / 10)) {
    target[offset + i] = 0x30 + rest % 10;
  }
  offset += digits;
  target[offset++] = 0x0d;
  target[offset++] = 0x0a;
  target[offset++] = 0x0d;
  target[offset++] = 0x0a;
  return offset;
}

function decimalDigits(value: number): number {
  let digits = 1;
  while (value >= 10) {
    value = Math.floor(value / 10);
    digits++;
  }
  return digits;
}

/** Reads a big-endian uint32 at `offset`. */
export function readLength(bytes: Uint8Array, offset: number): number {
  return ((bytes[offset] << 24) | (bytes[offset + 1] << 16) | (bytes[offset + 2] << 8) |
    bytes[offset + 3]) >>> 0;
}

/** Writes `length` as a big-endian uint32 at `offset`. */
export function writeLength(bytes: Uint8Array, offset: number, length: number): void {
  bytes[offset] = length >>> 24;
  bytes[offset + 1] = (length >>> 16) & 0xff;
  bytes[offset + 2] = (length >>> 8) & 0xff;
  bytes[offset + 3] = length & 0xff;
}

// Byte search for the line framings. Reading four bytes per step with a zero-byte test beats
// `Uint8Array.prototype.indexOf` once the range is long enough to amortize the word view
// (`deno bench -A bench/framing_bench.ts`, the `ndjson/decode-stream` cases).
const WORD_SCAN_MIN = 256;

/** The index of the first `byte` in `bytes` at or after `from`, or -1. */
export function findByte(bytes: Uint8Array, byte: number, from = 0): number {
  const length = bytes.length;
  if (length - from < WORD_SCAN_MIN) return bytes.indexOf(byte, from);
  let i = from;
  // Walk bytes up to a 4-byte boundary of the underlying buffer.
  for (; ((bytes.byteOffset + i) & 3) !== 0; i++) {
    if (bytes[i] === byte) return i;
  }
  const count = (length - i) >>> 2;
  const words = new Uint32Array(bytes.buffer, bytes.byteOffset + i, count);
  const pattern = byte * 0x0101_0101;
  for (let k = 0; k < count; k++) {
    const x = words[k] ^ pattern;
    // Non-zero exactly when some byte of x is zero, that is when some byte equals `byte`.
    if (((x - 0x0101_0101) & ~x & 0x8080_8080) !== 0) {
      return bytes.indexOf(byte, i + k * 4);
    }
  }
  return bytes.indexOf(byte, i + count * 4);
}
