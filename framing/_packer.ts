// Coalesces queued frames into few, large chunks. Shared by FrameEncoderStream and
// FrameWriter, so both write frames the same way.

import { FrameTooLargeError } from "../errors.ts";
import { FRAME_HEADER_BYTES, MAX_HEADER_LENGTH, writeLength } from "./_header.ts";

/** The default bound on one coalesced chunk: 64 KiB. */
export const DEFAULT_MAX_BATCH_BYTES = 64 * 1024;

/**
 * Frames queued for writing. `take()` turns them into chunks: runs of small frames copied
 * into one exactly-sized buffer of at most `maxBatchBytes`, and each payload larger than
 * `maxBatchBytes` passed on as its own chunk, uncopied, right after the chunk that ends with
 * its header.
 */
export class FramePacker {
  readonly maxBatchBytes: number;
  readonly maxFrameBytes: number;
  #frames: Uint8Array[] = [];
  #bytes = 0;

  constructor(maxBatchBytes: number, maxFrameBytes: number) {
    if (!Number.isInteger(maxBatchBytes) || maxBatchBytes < FRAME_HEADER_BYTES) {
      throw new RangeError(`maxBatchBytes must be an integer of at least 4, got ${maxBatchBytes}`);
    }
    if (
      !Number.isInteger(maxFrameBytes) || maxFrameBytes < 0 || maxFrameBytes > MAX_HEADER_LENGTH
    ) {
      throw new RangeError(
        `maxFrameBytes must be an integer from 0 to ${MAX_HEADER_LENGTH}, got ${maxFrameBytes}`,
      );
    }
    this.maxBatchBytes = maxBatchBytes;
    this.maxFrameBytes = maxFrameBytes;
  }

  /** Header and payload bytes queued and not yet taken. */
  get pendingBytes(): number {
    return this.#bytes;
  }

  get empty(): boolean {
    return this.#frames.length === 0;
  }

  /** Queues one frame. Throws `FrameTooLargeError` (nothing queued) past `maxFrameBytes`. */
  add(payload: Uint8Array): void {
    if (payload.length > this.maxFrameBytes) {
      throw new FrameTooLargeError(payload.length, this.maxFrameBytes);
    }
    this.#frames.push(payload);
    this.#bytes += FRAME_HEADER_BYTES + payload.length;
  }

  /** Removes every queued frame and returns the chunks to write, in order. */
  take(): Uint8Array[] {
    const frames = this.#frames;
    const max = this.maxBatchBytes;
    this.#frames = [];
    this.#bytes = 0;
    const chunks: Uint8Array[] = [];
    let i = 0;
    while (i < frames.length) {
      let runBytes = 0;
      let j = i;
      while (
        j < frames.length && frames[j].length <= max &&
        (j === i || runBytes + FRAME_HEADER_BYTES + frames[j].length <= max)
      ) {
        runBytes += FRAME_HEADER_BYTES + frames[j].length;
        j++;
      }
      const large = j < frames.length && frames[j].length > max ? frames[j] : undefined;
      const chunk = new Uint8Array(runBytes + (large ? FRAME_HEADER_BYTES : 0));
      let offset = 0;
      for (let k = i; k < j; k++) {
        const frame = frames[k];
        writeLength(chunk, offset, frame.length);
        chunk.set(frame, offset + FRAME_HEADER_BYTES);
        offset += FRAME_HEADER_BYTES + frame.length;
      }
      chunks.push(chunk);
      if (large) {
        writeLength(chunk, offset, large.length);
        chunks.push(large);
        j++;
      }
      i = j;
    }
    return chunks;
  }
}
