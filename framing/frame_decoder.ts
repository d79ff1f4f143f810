/**
 * The synchronous core of length-prefixed frame decoding.
 *
 * @module
 */

import { FrameTooLargeError, type FramingError, TruncatedFrameError } from "../errors.ts";
import { FRAME_HEADER_BYTES, MAX_HEADER_LENGTH, readLength, writeLength } from "./_header.ts";

export { FRAME_HEADER_BYTES };

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

const EMPTY = new Uint8Array(0);

/**
 * Splits a byte stream into length-prefixed frames, synchronously: {@linkcode push} a chunk,
 * then call {@linkcode next} until it returns `undefined` ("need more bytes").
 *
 * A frame that lies inside one chunk is returned as a view (`subarray`) of that chunk, with
 * no copy; only a frame that spans chunks is copied, once, into a buffer of its exact size.
 * The work is linear in the bytes pushed whatever the chunking.
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
  /** The largest payload accepted, in bytes. */
  readonly maxFrameBytes: number;

  #chunk: Uint8Array = EMPTY;
  #offset = 0;
  #header = new Uint8Array(FRAME_HEADER_BYTES);
  #headerFill = 0;
  #partial: Uint8Array | undefined;
  #partialFill = 0;
  #bytesCopied = 0;
  #error: FramingError | undefined;

  /**
   * Creates a decoder waiting for the first header.
   *
   * @param options Limits; see {@linkcode FrameDecoderOptions}.
   * @throws {RangeError} When `maxFrameBytes` is not an integer from 0 to 2^32 - 1.
   */
  constructor(options: FrameDecoderOptions = {}) {
    const max = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    if (!Number.isInteger(max) || max < 0 || max > MAX_HEADER_LENGTH) {
      throw new RangeError(
        `maxFrameBytes must be an integer from 0 to ${MAX_HEADER_LENGTH}, got ${max}`,
      );
    }
    this.maxFrameBytes = max;
  }

  /**
   * Payload bytes copied so far because frames spanned chunks. A frame that fits in its
   * chunk adds nothing; a decoder that re-copied its buffer per chunk would grow this
   * quadratically. Exposed for tests and diagnostics.
   */
  get bytesCopied(): number {
    return this.#bytesCopied;
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
    this.#chunk = chunk;
    this.#offset = 0;
  }

  /**
   * Returns the next whole frame's payload, or `undefined` when more bytes are needed.
   *
   * @throws {FrameTooLargeError} When a header announces more than `maxFrameBytes`; the
   * header alone is enough, none of the payload is buffered.
   */
  next(): Uint8Array | undefined {
    if (this.#error !== undefined) throw this.#error;
    const chunk = this.#chunk;
    const size = chunk.length;
    let offset = this.#offset;

    const partial = this.#partial;
    if (partial !== undefined) {
      const take = Math.min(partial.length - this.#partialFill, size - offset);
      partial.set(chunk.subarray(offset, offset + take), this.#partialFill);
      this.#partialFill += take;
      this.#bytesCopied += take;
      this.#offset = offset + take;
      if (this.#partialFill < partial.length) return undefined;
      this.#partial = undefined;
      return partial;
    }

    let length: number;
    if (this.#headerFill > 0 || size - offset < FRAME_HEADER_BYTES) {
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

    if (length > this.maxFrameBytes) {
      this.#offset = size;
      throw this.#error = new FrameTooLargeError(length, this.maxFrameBytes);
    }
    if (size - offset >= length) {
      this.#offset = offset + length;
      return chunk.subarray(offset, offset + length);
    }
    const frame = new Uint8Array(length);
    frame.set(chunk.subarray(offset));
    this.#bytesCopied += size - offset;
    this.#partial = frame;
    this.#partialFill = size - offset;
    this.#offset = size;
    return undefined;
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
    if (this.#partial !== undefined) {
      throw this.#error = new TruncatedFrameError(this.#partial.length - this.#partialFill);
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
