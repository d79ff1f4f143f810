/**
 * A stream pair from frame payloads to length-prefixed bytes, coalescing small frames.
 *
 * @module
 */

import { coalescingPair } from "./_coalescing_pair.ts";
import { DEFAULT_MAX_BATCH_BYTES, LengthPrefixPacker } from "./_packer.ts";
import { DEFAULT_MAX_FRAME_BYTES } from "./frame_decoder.ts";

export { DEFAULT_MAX_BATCH_BYTES };

/**
 * Options for {@linkcode FrameEncoderStream}, `ContentLengthEncoderStream` and `FrameWriter`.
 *
 * @example
 * ```ts
 * import { FrameEncoderStream, type FrameEncoderOptions } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const options: FrameEncoderOptions = { maxBatchBytes: 1024, maxFrameBytes: 4096 };
 * const { readable, writable } = new FrameEncoderStream(options);
 * const writer = writable.getWriter();
 * for (let i = 0; i < 100; i++) writer.write(new Uint8Array(96));
 * writer.close();
 * const chunks = await Array.fromAsync(readable);
 * assert.equal(chunks.length, 10); // 100 frames of 100 bytes, 10 per 1 KiB chunk
 * ```
 */
export interface FrameEncoderOptions {
  /**
   * The largest chunk small frames are coalesced into, in bytes. A frame whose header and
   * payload together exceed it is passed on as its own chunk, its payload not copied.
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
 * Frames written in the same turn are coalesced into one chunk of at most `maxBatchBytes`,
 * and so are frames that queue up while the consumer is busy, so a fast producer makes few
 * large writes. A frame written while the consumer waits goes out at the end of the
 * microtask turn, never delayed by a timer to wait for company. A frame larger than
 * `maxBatchBytes` is passed on as its own chunk without copying its payload. The stream takes
 * ownership of the payloads written to it: do not modify one after writing it.
 *
 * Errors travel both ways: a payload over `maxFrameBytes` errors both sides with
 * `FrameTooLargeError`, aborting the writable errors the readable, and cancelling the
 * readable errors the writable, each with the same reason.
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

  /**
   * Creates an encoder stream pair.
   *
   * @param options Batch and frame size limits; see {@linkcode FrameEncoderOptions}.
   * @throws {RangeError} When an option is out of range.
   */
  constructor(options: FrameEncoderOptions = {}) {
    const { readable, writable } = coalescingPair(
      new LengthPrefixPacker(
        options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES,
        options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
      ),
    );
    this.readable = readable;
    this.writable = writable;
  }
}
