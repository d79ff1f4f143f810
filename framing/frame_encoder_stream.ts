/**
 * A stream pair from frame payloads to length-prefixed bytes, coalescing small frames.
 *
 * @module
 */

import { DEFAULT_MAX_BATCH_BYTES, FramePacker } from "./_packer.ts";
import { DEFAULT_MAX_FRAME_BYTES } from "./frame_decoder.ts";

export { DEFAULT_MAX_BATCH_BYTES };

/** Options for {@linkcode FrameEncoderStream} and `FrameWriter`. */
export interface FrameEncoderOptions {
  /**
   * The largest chunk small frames are coalesced into, in bytes. A payload larger than this
   * is passed on as its own chunk without being copied.
   *
   * @default {DEFAULT_MAX_BATCH_BYTES} (64 KiB)
   */
  maxBatchBytes?: number;
  /**
   * The largest payload accepted. A larger one is refused with `FrameTooLargeError` before
   * anything is sent, since the peer would refuse it anyway.
   *
   * @default {DEFAULT_MAX_FRAME_BYTES} (64 MiB)
   */
  maxFrameBytes?: number;
}

/**
 * Encodes frame payloads as length-prefixed bytes: a 4-byte big-endian length, then the
 * payload.
 *
 * Frames that queue up while the consumer is busy are coalesced into one chunk of at most
 * `maxBatchBytes`, so a fast producer makes few large writes; a frame written while the
 * consumer waits goes out at once, never delayed to wait for company. A payload larger than
 * `maxBatchBytes` is passed on as its own chunk without copying. The stream takes ownership
 * of the payloads written to it: do not modify one after writing it.
 *
 * @example
 * ```ts
 * import { FrameDecoderStream, FrameEncoderStream } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const frames = [new Uint8Array([1]), new Uint8Array(0), new Uint8Array([2, 3])];
 * const decoded = await Array.fromAsync(
 *   ReadableStream.from(frames)
 *     .pipeThrough(new FrameEncoderStream())
 *     .pipeThrough(new FrameDecoderStream()),
 * );
 * assert.deepEqual(decoded, frames);
 * ```
 */
export class FrameEncoderStream implements ReadableWritablePair<Uint8Array, Uint8Array> {
  /** Encoded bytes. */
  readonly readable: ReadableStream<Uint8Array>;
  /** Frame payloads to encode. */
  readonly writable: WritableStream<Uint8Array>;

  /** @param options Batch and frame size limits; see {@linkcode FrameEncoderOptions}. */
  constructor(options: FrameEncoderOptions = {}) {
    const packer = new FramePacker(
      options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES,
      options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
    );
    // A pull waiting for the next frame, and a write waiting for the batch to drain.
    let wakePull: (() => void) | undefined;
    let wakeWrite: (() => void) | undefined;
    let writableClosed = false;
    let readableError: { reason: unknown } | undefined;
    let readableController!: ReadableStreamDefaultController<Uint8Array>;

    this.readable = new ReadableStream<Uint8Array>({
      start(controller) {
        readableController = controller;
      },
      async pull(controller) {
        if (packer.empty && !writableClosed) {
          await new Promise<void>((resolve) => wakePull = resolve);
        }
        if (packer.empty) {
          if (writableClosed) controller.close();
          return;
        }
        for (const chunk of packer.take()) controller.enqueue(chunk);
        const wake = wakeWrite;
        wakeWrite = undefined;
        wake?.();
      },
      cancel(reason) {
        readableError = { reason };
        wakeWrite?.();
      },
    }, { highWaterMark: 0 });

    this.writable = new WritableStream<Uint8Array>({
      write(payload): void | Promise<void> {
        if (readableError) throw readableError.reason;
        packer.add(payload);
        const wake = wakePull;
        wakePull = undefined;
        wake?.();
        if (packer.pendingBytes >= packer.maxBatchBytes) {
          return new Promise<void>((resolve) => wakeWrite = resolve).then(() => {
            if (readableError) throw readableError.reason;
          });
        }
        return undefined;
      },
      close() {
        writableClosed = true;
        wakePull?.();
      },
      abort(reason) {
        readableController.error(reason);
      },
    });
  }
}
