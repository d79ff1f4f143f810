// Coalesces queued frames into few, large chunks. Shared by every encoder (length-prefixed,
// NDJSON, Content-Length) and by FrameWriter, so all of them write frames the same way.

import { FrameSyntaxError, FrameTooLargeError } from "../errors.ts";
import { findByte } from "./_find_byte.ts";
import { FRAME_HEADER_BYTES, MAX_HEADER_LENGTH, writeLength } from "./_header.ts";

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

const EMPTY_CHUNKS: Uint8Array[] = [];

/**
 * Frames queued for writing. `take()` turns them into chunks: runs of small frames copied
 * into one exactly-sized buffer of at most `maxBatchBytes`, and each frame whose encoding
 * exceeds `maxBatchBytes` passed on uncopied as its own chunk, its header ending the chunk
 * before it and its trailer (if the format has one) starting the chunk after it.
 *
 * Subclasses say how a frame is wrapped: a header computed from the payload's length, and a
 * trailer of fixed bytes.
 */
export abstract class BatchPacker {
  readonly maxBatchBytes: number;
  readonly maxFrameBytes: number;
  #frames: Uint8Array[] = [];
  #bytes = 0;

  constructor(maxBatchBytes: number, maxFrameBytes: number) {
    // 64 bytes hold any header on its own, so no chunk but a passed-through payload ever
    // exceeds the bound.
    if (!Number.isInteger(maxBatchBytes) || maxBatchBytes < 64) {
      throw new RangeError(`maxBatchBytes must be an integer of at least 64, got ${maxBatchBytes}`);
    }
    if (
      !Number.isInteger(maxFrameBytes) || maxFrameBytes < 0 || maxFrameBytes > MAX_HEADER_LENGTH
    ) {
      throw new RangeError(
        `${this.limitName} must be an integer from 0 to ${MAX_HEADER_LENGTH}, got ${maxFrameBytes}`,
      );
    }
    this.maxBatchBytes = maxBatchBytes;
    this.maxFrameBytes = maxFrameBytes;
  }

  /** Encoded bytes (headers, payloads, trailers) queued and not yet taken. */
  get pendingBytes(): number {
    return this.#bytes;
  }

  get empty(): boolean {
    return this.#frames.length === 0;
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
    if (payload.length > this.maxFrameBytes) {
      throw new FrameTooLargeError(payload.length, this.maxFrameBytes, {
        limitName: this.limitName,
      });
    }
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

  /** Queues one frame that {@linkcode check} has accepted. */
  enqueue(payload: Uint8Array): void {
    this.#frames.push(payload);
    this.#bytes += this.headerBytes(payload.length) + payload.length + this.trailer.length;
  }

  /** Drops every queued frame. */
  clear(): void {
    this.#frames = [];
    this.#bytes = 0;
  }

  /** Removes every queued frame and returns the chunks to write, in order. */
  take(): Uint8Array[] {
    const frames = this.#frames;
    const count = frames.length;
    if (count === 0) return EMPTY_CHUNKS;
    this.#frames = [];
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
        const need = this.headerBytes(frames[j].length) + frames[j].length + trailerBytes;
        if (runBytes + need > max) break;
        runBytes += need;
        j++;
      }
      let large: Uint8Array | undefined;
      let largeHeader = 0;
      if (j < count) {
        const length = frames[j].length;
        if (this.headerBytes(length) + length + trailerBytes > max) {
          large = frames[j];
          largeHeader = this.headerBytes(length);
        }
      }
      const headerJoinsRun = large !== undefined && runBytes + largeHeader <= max;
      const chunkBytes = runBytes + (headerJoinsRun ? largeHeader : 0);
      if (chunkBytes > 0) {
        const chunk = new Uint8Array(chunkBytes);
        let offset = 0;
        if (carry > 0) {
          chunk.set(trailer, 0);
          offset = carry;
        }
        for (let k = i; k < j; k++) {
          const frame = frames[k];
          const length = frame.length;
          this.writeHeader(chunk, offset, length);
          offset += this.headerBytes(length);
          copyInto(chunk, offset, frame);
          offset += length;
          if (trailerBytes > 0) {
            chunk.set(trailer, offset);
            offset += trailerBytes;
          }
        }
        if (headerJoinsRun) this.writeHeader(chunk, offset, large!.length);
        chunks.push(chunk);
      }
      carry = 0;
      if (large !== undefined) {
        if (!headerJoinsRun && largeHeader > 0) {
          const header = new Uint8Array(largeHeader);
          this.writeHeader(header, 0, large.length);
          chunks.push(header);
        }
        if (large.length > 0) chunks.push(large);
        carry = trailerBytes;
        j++;
      }
      i = j;
    }
    return chunks;
  }
}

// `TypedArray.prototype.set` has a fixed cost that dominates for tiny payloads.
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
