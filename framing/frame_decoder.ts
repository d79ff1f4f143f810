/**
 * The synchronous core of length-prefixed frame decoding, and the reader that feeds it from a
 * transport, large frames straight into their own buffers.
 *
 * @module
 */

import { FrameTooLargeError, type FramingError, TruncatedFrameError } from "../errors.ts";
import { FRAME_HEADER_BYTES, MAX_HEADER_LENGTH, readLength, writeLength } from "./_packer.ts";
import { LargeFrames, MAX_RECYCLED_BUFFERS, type PartialFrame } from "./_large_frames.ts";
import { integerOption } from "../_options.ts";

export { FRAME_HEADER_BYTES, MAX_RECYCLED_BUFFERS };

/**
 * The default `maxFrameBytes` of the length-prefixed and Content-Length framings: 64 MiB.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_FRAME_BYTES, FrameDecoder } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * assert.equal(new FrameDecoder().maxFrameBytes, DEFAULT_MAX_FRAME_BYTES);
 * assert.equal(DEFAULT_MAX_FRAME_BYTES, 64 * 1024 * 1024);
 * ```
 */
export const DEFAULT_MAX_FRAME_BYTES: number = 64 * 1024 * 1024;

/**
 * Options for {@linkcode FrameDecoder} and `FrameDecoderStream`.
 *
 * @example
 * ```ts
 * import { FrameDecoder, type FrameDecoderOptions } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const options: FrameDecoderOptions = { maxFrameBytes: 1024 };
 * const decoder = new FrameDecoder(options);
 * decoder.push(new Uint8Array([0, 0, 4, 1])); // a header announcing 1025 bytes
 * assert.throws(() => decoder.next(), {
 *   name: "FrameTooLargeError",
 *   message: "Frame of 1025 bytes exceeds maxFrameBytes (1024)",
 * });
 * ```
 */
export interface FrameDecoderOptions {
  /**
   * The largest payload accepted, in bytes. A header announcing more raises
   * `FrameTooLargeError` before any of the payload is buffered.
   *
   * @default {DEFAULT_MAX_FRAME_BYTES} (64 MiB)
   */
  maxFrameBytes?: number;
}

/**
 * {@linkcode FrameDecoder}'s options: the limits of {@linkcode FrameDecoderOptions}, and how to
 * split a large frame into its head and the rest.
 *
 * @example
 * ```ts
 * import { encodeFrame, FrameDecoder, type FrameDecoderSplitOptions } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * // Frames whose first byte says how many head bytes follow it.
 * const options: FrameDecoderSplitOptions = {
 *   splitHead: (start) => start.length === 0 ? undefined : 1 + start[0],
 * };
 * const decoder = new FrameDecoder(options);
 * const payload = new Uint8Array(100_000).fill(9);
 * payload.set([2, 7, 7]); // a 3-byte head
 * const bytes = encodeFrame(payload);
 * decoder.push(bytes.subarray(0, 7)); // the header and the head
 * assert.equal(decoder.next(), undefined);
 * const target = decoder.readTarget()!;
 * assert.equal(target.length, 99_997); // the whole of the rest's own buffer
 * target.set(bytes.subarray(7)); // as a read into the target would
 * decoder.push(target);
 * assert.deepEqual(decoder.next(), new Uint8Array([2, 7, 7]));
 * assert.equal(decoder.tail?.length, 99_997);
 * ```
 */
export interface FrameDecoderSplitOptions extends FrameDecoderOptions {
  /**
   * Given the first bytes of a frame of 64 KiB or more that spans chunks (all of the frame
   * that its first chunk holds), how many of them are the frame's head, or `undefined` to
   * keep the frame whole. A split frame comes out of {@linkcode FrameDecoder.next} as its
   * head, with the rest in {@linkcode FrameDecoder.tail}: a buffer of its own, which a read
   * into {@linkcode FrameDecoder.readTarget} can take whole (a thread transport then moves a
   * transferred buffer there instead of copying it). For a protocol whose frames are an
   * envelope then a body, so that the body is never copied to sit behind its envelope.
   */
  splitHead?: (start: Uint8Array) => number | undefined;
}

const EMPTY = new Uint8Array(0);

/** How many bytes of an oversized frame's start FrameTooLargeError keeps, header included. */
const RECEIVED_BYTES = 64;

/**
 * Splits a byte stream into length-prefixed frames, synchronously: {@linkcode push} a chunk,
 * then call {@linkcode next} until it returns `undefined` ("need more bytes").
 *
 * A frame that lies inside one chunk is returned as a view (`subarray`) of that chunk, with
 * no copy; only a frame that spans chunks is copied, once, into a buffer of its exact size (one
 * over 4 MiB into one that grows as its bytes arrive, which copies them again as it grows).
 * The work is linear in the bytes pushed whatever the chunking. A reader that can read into
 * a given buffer spares even that copy for large frames by reading where
 * {@linkcode readTarget} says (`FrameReader` does). A frame of 64 KiB or more that got a buffer
 * of its own can be handed back with {@linkcode recycle} once its bytes are no longer needed,
 * so that a later frame of the same size reuses that memory instead of allocating.
 *
 * Once it has thrown a `FramingError` the decoder has lost its place in the stream (there is
 * no way to find the next header), so every later call throws the same error.
 *
 * @example
 * ```ts
 * import { FrameDecoder, encodeFrame } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const bytes = encodeFrame(new Uint8Array([1, 2, 3]));
 * const decoder = new FrameDecoder();
 * decoder.push(bytes.subarray(0, 5)); // header and one payload byte
 * assert.equal(decoder.next(), undefined); // need more bytes
 * decoder.push(bytes.subarray(5));
 * assert.deepEqual(decoder.next(), new Uint8Array([1, 2, 3]));
 * assert.equal(decoder.next(), undefined);
 * decoder.end(); // throws TruncatedFrameError if a frame were unfinished
 * ```
 */
export class FrameDecoder {
  #maxFrameBytes: number;

  #chunk: Uint8Array = EMPTY;
  #offset = 0;
  #header: Uint8Array = new Uint8Array(FRAME_HEADER_BYTES);
  #headerFill = 0;
  /** The frame being assembled, if it spans chunks. */
  #partial: PartialFrame | undefined;
  /** The rest of the split frame `next()` returned last. */
  #tail: Uint8Array | undefined;
  #bytesCopied = 0;
  #error: FramingError | undefined;
  /**
   * What readTarget() last returned, until the next push(): the unfilled rest of the partial
   * frame, or else of the header (whose fill and size say where it lies, as the view itself
   * reads as empty at offset 0 once a transfer detached it).
   */
  #target: Uint8Array | undefined;
  /** When large frames are read apart or split, and the buffers recycled for them. */
  readonly #large: LargeFrames;

  /**
   * Creates a decoder waiting for the first header.
   *
   * @param options Limits, and how to split large frames; see
   * {@linkcode FrameDecoderSplitOptions}.
   * @throws {RangeError} When `maxFrameBytes` is not an integer from 0 to 2^32 - 1.
   */
  constructor(options: FrameDecoderSplitOptions = {}) {
    const max = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    this.#maxFrameBytes = integerOption("maxFrameBytes", max, 0, MAX_HEADER_LENGTH);
    this.#large = new LargeFrames(options.splitHead);
  }

  /**
   * The rest of the frame {@linkcode next} returned last, when that frame was split (see
   * {@linkcode FrameDecoderSplitOptions.splitHead}): the frame is what `next()` returned
   * followed by these bytes. `undefined` after any other frame.
   *
   * @example
   * ```ts
   * import { encodeFrame, FrameDecoder } from "@conduit/ipc/framing";
   * import assert from "node:assert/strict";
   *
   * const decoder = new FrameDecoder({ splitHead: () => 1 });
   * decoder.push(encodeFrame(new Uint8Array([5, 6]))); // small: never split
   * assert.deepEqual(decoder.next(), new Uint8Array([5, 6]));
   * assert.equal(decoder.tail, undefined);
   * ```
   */
  get tail(): Uint8Array | undefined {
    return this.#tail;
  }

  /**
   * The largest payload accepted, in bytes. It may change between frames: a protocol with a
   * handshake reads with a small limit until the handshake is done, then raises it, so that
   * an unauthenticated peer cannot make it buffer a large frame. A new limit applies from the
   * next header; a frame whose header was read already keeps the limit it was checked with.
   *
   * @throws {RangeError} When set to a value that is not an integer from 0 to 2^32 - 1.
   *
   * @example
   * ```ts
   * import { encodeFrame, FrameDecoder } from "@conduit/ipc/framing";
   * import assert from "node:assert/strict";
   *
   * const decoder = new FrameDecoder({ maxFrameBytes: 1024 }); // until the handshake
   * decoder.push(encodeFrame(new Uint8Array(10))); // a small HELLO
   * assert.equal(decoder.next()?.length, 10);
   * decoder.maxFrameBytes = 64 * 1024 * 1024; // the handshake is done
   * decoder.push(encodeFrame(new Uint8Array(5000)));
   * assert.equal(decoder.next()?.length, 5000);
   * ```
   */
  get maxFrameBytes(): number {
    return this.#maxFrameBytes;
  }

  set maxFrameBytes(bytes: number) {
    this.#maxFrameBytes = integerOption("maxFrameBytes", bytes, 0, MAX_HEADER_LENGTH);
  }

  /**
   * Payload bytes copied so far because frames spanned chunks. A frame that fits in its
   * chunk adds nothing; a decoder that re-copied its buffer per chunk would grow this
   * quadratically. Exposed for tests and diagnostics.
   */
  get bytesCopied(): number {
    return this.#bytesCopied + (this.#partial?.copied ?? 0);
  }

  /**
   * Buffers allocated so far for frames that spanned chunks, one per frame unless it reused a
   * buffer handed back through {@linkcode recycle} (a buffer that grew as its frame arrived
   * counts once). Exposed for tests and diagnostics.
   */
  get buffersAllocated(): number {
    return this.#large.buffersAllocated;
  }

  /** Whether a frame (or its header) has started and not yet finished. */
  get midFrame(): boolean {
    return this.#headerFill > 0 || this.#partial !== undefined;
  }

  /**
   * Gives the decoder the next chunk of the stream. The previous chunk must have been
   * drained: call {@linkcode next} until it returns `undefined` first.
   *
   * @param chunk The next bytes. Frames returned as views keep referring to it, so it must
   * not be modified afterwards.
   * @throws {FramingError} The error an earlier call threw, if any.
   */
  push(chunk: Uint8Array): void {
    if (this.#error !== undefined) throw this.#error;
    if (this.#offset < this.#chunk.length) {
      throw new Error("FrameDecoder.push() called before next() drained the previous chunk");
    }
    const target = this.#target;
    if (target !== undefined) {
      this.#target = undefined;
      if (this.#filledTarget(target, chunk)) {
        this.#chunk = EMPTY;
        this.#offset = 0;
        return;
      }
    }
    this.#large.expectLarge = false;
    this.#chunk = chunk;
    this.#offset = 0;
  }

  /**
   * Payload bytes the frame being assembled still needs: 0 unless a header has announced a
   * frame that the chunks pushed so far only partly hold.
   *
   * @example
   * ```ts
   * import { FrameDecoder } from "@conduit/ipc/framing";
   * import assert from "node:assert/strict";
   *
   * const decoder = new FrameDecoder();
   * decoder.push(new Uint8Array([0, 0, 0, 10, 1, 2, 3])); // 10 announced, 3 given
   * assert.equal(decoder.next(), undefined);
   * assert.equal(decoder.pendingBytes, 7);
   * ```
   */
  get pendingBytes(): number {
    const partial = this.#partial;
    return partial === undefined ? 0 : partial.size - partial.fill;
  }

  /**
   * Where the next bytes of the stream should be read so that they need no copy, or
   * `undefined` when an ordinary chunk is as good. The target is the unfilled rest of the
   * buffer of a frame that needed at least 64 KiB more when it was first offered (a frame over
   * 4 MiB gets a buffer of 2 MiB first, grown eightfold as it fills), or, right after such a frame,
   * the next header alone (large frames tend to come in runs). While frames of 64 KiB or more
   * come back to back (a chunk held one and more bytes after it) or are handed back through
   * {@linkcode recycle}, every large frame is read that way, its header alone and then the
   * frame into a buffer of its own, until a small frame ends the run; a large frame alone in
   * its chunk, as a reply to one call comes, stays a view and costs no second read. With
   * `splitHead` the next header is read with the head after it, into a small buffer of its
   * own read as an ordinary chunk.
   *
   * Read at most its length into it, then {@linkcode push} the filled start of it, or the
   * view a BYOB read returned (over this buffer, transferred): the decoder takes those bytes
   * where they are. Pushing any other chunk instead is fine while the target's buffer is
   * still attached. `FrameReader` does all this.
   *
   * @param whole The reader moves a received buffer into a target that is the whole of a
   * buffer its size (a thread transport): a large frame none of whose rest has come is offered
   * its whole buffer at once, rather than one that grows as its bytes arrive.
   * @returns A view into the decoder's own buffers, or `undefined`.
   * @throws {FramingError} The error an earlier call threw, if any.
   *
   * @example
   * ```ts
   * import { encodeFrame, FrameDecoder } from "@conduit/ipc/framing";
   * import assert from "node:assert/strict";
   *
   * const bytes = encodeFrame(new Uint8Array(100_000).fill(1));
   * const decoder = new FrameDecoder();
   * decoder.push(bytes.subarray(0, 1000));
   * assert.equal(decoder.next(), undefined);
   * assert.equal(decoder.pendingBytes, 99_004);
   * const target = decoder.readTarget()!;
   * assert.equal(target.length, 99_004);
   * target.set(bytes.subarray(1000)); // as a read into the target would
   * decoder.push(target);
   * assert.equal(decoder.next()?.length, 100_000);
   * assert.equal(decoder.bytesCopied, 996); // the first chunk's payload only
   * ```
   */
  readTarget(whole: boolean = false): Uint8Array | undefined {
    if (this.#error !== undefined) throw this.#error;
    if (this.#offset < this.#chunk.length) {
      throw new Error("FrameDecoder.readTarget() called before next() drained the chunk");
    }
    let target: Uint8Array;
    const partial = this.#partial;
    if (partial !== undefined) {
      const pending = partial.size - partial.fill;
      if (pending === 0 || (!this.#large.readsDirect(partial.size, pending) && !partial.direct)) {
        return undefined;
      }
      target = partial.room(whole);
    } else if (this.#large.expectLarge) {
      // Where frames are split, the next frame's head is read with its header: a fresh
      // buffer read as an ordinary chunk, so that the head is there to split at.
      const probe = this.#headerFill === 0 ? this.#large.probe() : undefined;
      if (probe !== undefined) return probe;
      target = this.#header.subarray(this.#headerFill);
    } else {
      return undefined;
    }
    this.#target = target;
    return target;
  }

  /** Takes `chunk` as the bytes read into `target`, if it is them; false for another chunk. */
  #filledTarget(target: Uint8Array, chunk: Uint8Array): boolean {
    const transferred = chunk.buffer !== target.buffer;
    // A transfer leaves the target's buffer detached, with a byte length of 0.
    if (transferred && target.buffer.byteLength !== 0) return false;
    const partial = this.#partial;
    const fill = partial !== undefined ? partial.fill : this.#headerFill;
    // The size of the target's own buffer, which a transfer keeps.
    const size = partial !== undefined ? partial.capacity : FRAME_HEADER_BYTES;
    if (
      chunk.byteOffset !== fill || chunk.length > size - fill || chunk.buffer.byteLength !== size
    ) {
      if (!transferred) return false;
      throw new Error(
        "FrameDecoder.push() needs the view the read into readTarget() returned: " +
          "that buffer was transferred, and the bytes already assembled in it with it",
      );
    }
    if (partial !== undefined) {
      if (transferred) partial.bytes = new Uint8Array(chunk.buffer);
      partial.fill += chunk.length;
      partial.direct = true;
    } else {
      if (transferred) this.#header = new Uint8Array(chunk.buffer);
      this.#headerFill += chunk.length;
    }
    return true;
  }

  /**
   * Returns the next whole frame's payload, or `undefined` when more bytes are needed.
   *
   * @throws {FrameTooLargeError} When a header announces more than `maxFrameBytes`; the
   * header alone is enough, none of the payload is buffered.
   */
  next(): Uint8Array | undefined {
    if (this.#error !== undefined) throw this.#error;
    this.#tail = undefined;
    if (this.#partial !== undefined) return this.#fillPartial();
    const chunk = this.#chunk;
    const size = chunk.length;
    let offset = this.#offset;

    let length: number;
    // Whether the header was assembled in #header (it spanned chunks); else it lies in the
    // chunk just before offset. A flag, not a view of it: this runs once per frame.
    let assembled = false;
    if (this.#headerFill > 0 || size - offset < FRAME_HEADER_BYTES) {
      assembled = true;
      const header = this.#header;
      while (this.#headerFill < FRAME_HEADER_BYTES && offset < size) {
        header[this.#headerFill++] = chunk[offset++];
      }
      this.#offset = offset;
      if (this.#headerFill < FRAME_HEADER_BYTES) return undefined;
      this.#headerFill = 0;
      length = readLength(header, 0);
    } else {
      length = readLength(chunk, offset);
      offset += FRAME_HEADER_BYTES;
    }

    if (length > this.#maxFrameBytes) throw this.#tooLarge(length, offset, assembled);
    if (size - offset >= length) {
      this.#offset = offset + length;
      this.#large.viewed(length, offset + length < size);
      return chunk.subarray(offset, offset + length);
    }
    this.#startPartial(length, offset);
    return this.#fillPartial();
  }

  /**
   * next() with a frame under way that spans chunks: copies what the chunk holds of it, and
   * returns the frame (or its head) once complete.
   */
  #fillPartial(): Uint8Array | undefined {
    const partial = this.#partial!;
    this.#offset = partial.take(this.#chunk, this.#offset);
    if (partial.fill < partial.size) return undefined;
    this.#partial = undefined;
    this.#bytesCopied += partial.copied;
    this.#large.assembled(partial.bytes, partial.size, partial.direct);
    if (partial.head === undefined) return partial.bytes;
    this.#tail = partial.bytes;
    return partial.head;
  }

  /**
   * A frame of `length` bytes starts at `offset` and spans chunks: it gets a buffer of its
   * own, or its head and its rest do; next() copies the chunk's part of it there.
   */
  #startPartial(length: number, offset: number): void {
    const chunk = this.#chunk;
    let head: Uint8Array | undefined;
    const split = this.#large.splitAt(length, chunk.subarray(offset));
    if (split > 0) {
      head = chunk.slice(offset, offset + split);
      this.#bytesCopied += split;
      offset += split;
      length -= split;
    }
    this.#partial = this.#large.start(length, head);
    this.#offset = offset;
  }

  /**
   * The error of a header announcing `length` bytes, over the limit, its payload starting at
   * `offset`: it keeps the frame's first bytes, and the decoder fails with it.
   */
  #tooLarge(length: number, offset: number, assembled: boolean): FrameTooLargeError {
    const chunk = this.#chunk;
    const size = chunk.length;
    this.#offset = size;
    const header = assembled ? this.#header : chunk.subarray(offset - FRAME_HEADER_BYTES);
    const received = new Uint8Array(Math.min(RECEIVED_BYTES, FRAME_HEADER_BYTES + size - offset));
    received.set(header.subarray(0, FRAME_HEADER_BYTES));
    received.set(
      chunk.subarray(offset, offset + received.length - FRAME_HEADER_BYTES),
      FRAME_HEADER_BYTES,
    );
    const error = new FrameTooLargeError(length, this.#maxFrameBytes, { received });
    this.#error = error;
    return error;
  }

  /**
   * Hands back the memory of a frame this decoder returned, for a later frame of the same
   * size to reuse instead of allocating. It takes only the buffer of a frame of 64 KiB or more
   * that spanned chunks (those get a buffer of their own), once: `bytes` may be the frame or
   * any view into it, such as the part a codec passed through.
   *
   * When it returns true the buffer is detached: `bytes` and every other view of that frame
   * read as empty from then on, and its memory will hold a later frame. So call it only once
   * nothing needs any part of the frame any more.
   *
   * Handing back 64 KiB or more also tells the decoder that large frames are recycled: from
   * then on each large frame is read into a buffer of its own (the next header alone, then
   * the frame, where the reader reads into {@linkcode readTarget}), even one that would have
   * fit in a read with others as a view, which could not be taken back.
   *
   * @param bytes A frame, or a view into one, that is no longer needed.
   * @returns Whether the memory was taken; false for a frame that was a view into a chunk,
   * a smaller frame, bytes this decoder did not return, or a frame recycled already.
   *
   * @example
   * ```ts
   * import { encodeFrame, FrameDecoder } from "@conduit/ipc/framing";
   * import assert from "node:assert/strict";
   *
   * const decoder = new FrameDecoder();
   * const receive = (fill: number): Uint8Array => {
   *   const bytes = encodeFrame(new Uint8Array(100_000).fill(fill));
   *   decoder.push(bytes.subarray(0, 1000)); // the frame spans two chunks
   *   assert.equal(decoder.next(), undefined);
   *   decoder.push(bytes.subarray(1000));
   *   return decoder.next()!;
   * };
   * const first = receive(1);
   * assert.equal(decoder.recycle(first), true);
   * assert.equal(first.length, 0); // detached: its memory is the decoder's again
   * assert.equal(decoder.recycle(first), false);
   * const second = receive(2);
   * assert.equal(second[99_999], 2);
   * assert.equal(decoder.buffersAllocated, 1); // the second frame reused the first's memory
   * ```
   */
  recycle(bytes: Uint8Array): boolean {
    return this.#large.recycle(bytes);
  }

  /**
   * Declares the end of the stream.
   *
   * @throws {TruncatedFrameError} When the stream ended inside a frame, naming how many bytes
   * were missing.
   */
  end(): void {
    if (this.#error !== undefined) throw this.#error;
    if (this.#offset < this.#chunk.length) {
      throw new Error("FrameDecoder.end() called before next() drained the last chunk");
    }
    const partial = this.#partial;
    if (partial !== undefined) {
      throw this.#error = new TruncatedFrameError(partial.size - partial.fill);
    }
    if (this.#headerFill > 0) {
      throw this.#error = new TruncatedFrameError(FRAME_HEADER_BYTES - this.#headerFill);
    }
  }
}

/**
 * Encodes one frame: a 4-byte big-endian length followed by the payload, copied into one new
 * buffer. For streams of frames use `FrameEncoderStream` or `FrameWriter`, which coalesce
 * small frames and never copy large payloads.
 *
 * @param payload The frame's payload.
 * @returns The header and payload in one buffer.
 *
 * @example
 * ```ts
 * import { encodeFrame } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(encodeFrame(new Uint8Array([9])), new Uint8Array([0, 0, 0, 1, 9]));
 * ```
 */
export function encodeFrame(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(FRAME_HEADER_BYTES + payload.length);
  writeLength(out, 0, payload.length);
  out.set(payload, FRAME_HEADER_BYTES);
  return out;
}

/**
 * Where a {@linkcode FrameReader} reads: a byte stream, and optionally a way to read the next
 * bytes straight into a given buffer, and one to read them without the stream. Every
 * `Transport` is one; the Unix socket, TCP and stdio transports have `readInto` and
 * `readChunk`.
 *
 * @example
 * ```ts
 * import type { FrameSource } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const source: FrameSource = { readable: ReadableStream.from([new Uint8Array([0, 0, 0, 0])]) };
 * assert.equal(source.readInto, undefined);
 * ```
 */
export interface FrameSource {
  /** The bytes. */
  readonly readable: ReadableStream<Uint8Array>;
  /**
   * Reads the next bytes into `view` instead of through `readable`, whose reader the caller
   * holds with no read pending: resolves with the bytes read, a view of the start of `view`
   * (or of the buffer a transfer moved it to), or `null` once the stream has ended.
   */
  readonly readInto?: ((view: Uint8Array) => Promise<Uint8Array | null>) | undefined;
  /**
   * Whether `readInto` moves a received buffer into a `view` that is a whole buffer of its
   * size (a thread transport): a large frame's whole buffer is then offered at once.
   */
  readonly readIntoMoves?: boolean | undefined;
  /**
   * Reads the next chunk without `readable`: resolves with it, or `null` once the bytes have
   * ended. A source that has it is read only this way and with `readInto`; its `readable` is
   * never touched, so it need not even be created.
   */
  readonly readChunk?: (() => Promise<Uint8Array | null>) | undefined;
}

/**
 * Reads a {@linkcode FrameSource} for a {@linkcode FrameDecoder}: a drop-in for the stream's
 * default reader in a parse loop (`read()`, push the chunk, drain `next()`), which reads the
 * rest of a large frame straight into the frame's buffer when the source has `readInto`, so
 * that frame is never copied. It asks the decoder's `readTarget()` before every read.
 *
 * Push every chunk it returns into that decoder, and drain the decoder before the next
 * `read()`.
 *
 * @example
 * ```ts
 * import { encodeFrame, FrameDecoder, FrameReader } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * // A source that delivers at most 1000 bytes per read, the way a socket does.
 * const bytes = encodeFrame(new Uint8Array(100_000).fill(7));
 * let sent = 0;
 * const take = (max: number) => {
 *   const n = Math.min(1000, max, bytes.length - sent);
 *   return bytes.subarray(sent, sent += n);
 * };
 * const source = {
 *   readable: new ReadableStream<Uint8Array>({
 *     pull: (controller) => sent < bytes.length ? controller.enqueue(take(1000)) : controller.close(),
 *   }, { highWaterMark: 0 }),
 *   readInto: (view: Uint8Array) => {
 *     if (sent === bytes.length) return Promise.resolve(null);
 *     const chunk = take(view.length);
 *     view.set(chunk);
 *     return Promise.resolve(view.subarray(0, chunk.length));
 *   },
 * };
 *
 * const decoder = new FrameDecoder();
 * const reader = new FrameReader(source, decoder);
 * const frames: Uint8Array[] = [];
 * for (let r = await reader.read(); !r.done; r = await reader.read()) {
 *   decoder.push(r.value);
 *   for (let frame = decoder.next(); frame !== undefined; frame = decoder.next()) {
 *     frames.push(frame);
 *   }
 * }
 * decoder.end();
 * assert.equal(frames.length, 1);
 * assert.equal(frames[0].length, 100_000);
 * // Only the first read's 996 payload bytes were copied; the rest was read into the frame.
 * assert.equal(decoder.bytesCopied, 996);
 * ```
 */
export class FrameReader {
  readonly #source: FrameSource;
  readonly #decoder: FrameDecoder;
  /** The lock on the source's `readable`; none over a source with `readChunk`. */
  readonly #reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  /** The source's `readIntoMoves`, asked once. */
  readonly #moves: boolean;

  /**
   * Locks the source's `readable`, as `getReader()` does, to read frames into `decoder`;
   * over a source with `readChunk`, reads with it instead and leaves `readable` alone.
   *
   * @param source The bytes, e.g. a transport.
   * @param decoder The decoder every chunk read will be pushed into.
   * @throws {TypeError} When the readable is locked already.
   */
  constructor(source: FrameSource, decoder: FrameDecoder) {
    this.#source = source;
    this.#decoder = decoder;
    this.#reader = source.readChunk === undefined ? source.readable.getReader() : undefined;
    this.#moves = source.readIntoMoves === true;
  }

  /**
   * Reads the next bytes, into the decoder's read target when it offers one.
   *
   * @returns The next chunk, or `done` at the end, as a default reader's `read()`.
   */
  read(): Promise<ReadableStreamReadResult<Uint8Array>> {
    if (this.#source.readInto !== undefined) {
      const target = this.#decoder.readTarget(this.#moves);
      if (target !== undefined) return this.#source.readInto(target).then(toResult);
    }
    return this.#reader?.read() ?? this.#source.readChunk!().then(toResult);
  }

  /**
   * Cancels the stream; a pending `read()` settles. Over a source read with `readChunk` it
   * does nothing: the source's owner ends it (closing a transport settles a pending read).
   *
   * @param reason Passed to the stream's source.
   */
  cancel(reason?: unknown): Promise<void> {
    return this.#reader?.cancel(reason) ?? Promise.resolve();
  }

  /**
   * Reads the next bytes as {@linkcode read} does, resolving with the chunk itself, or `null`
   * at the end: no result object per read.
   *
   * @returns The next chunk, or `null` at the end.
   */
  readBytes(): Promise<Uint8Array | null> {
    const source = this.#source;
    if (source.readInto !== undefined) {
      const target = this.#decoder.readTarget(this.#moves);
      if (target !== undefined) return source.readInto(target);
    }
    return source.readChunk?.() ?? this.#reader!.read().then(fromResult);
  }

  /** Unlocks the stream (if it was locked: not over a source with `readChunk`). */
  releaseLock(): void {
    this.#reader?.releaseLock();
  }
}

function fromResult(result: ReadableStreamReadResult<Uint8Array>): Uint8Array | null {
  return result.done ? null : result.value;
}

function toResult(chunk: Uint8Array | null): ReadableStreamReadResult<Uint8Array> {
  return chunk === null ? { done: true, value: undefined } : { done: false, value: chunk };
}
