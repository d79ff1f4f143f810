/**
 * A `TransformStream` from bytes to length-prefixed frames.
 *
 * @module
 */

import { FrameDecoder, type FrameDecoderOptions } from "./frame_decoder.ts";

export type { FrameDecoderOptions };

/**
 * Decodes a byte stream into frame payloads. Each frame is a 4-byte big-endian length and
 * that many bytes. Correct for any chunking; frames inside one chunk come out as views of it,
 * frames spanning chunks are copied once. Errors the stream with `FrameTooLargeError` when a
 * header exceeds `maxFrameBytes` (before buffering the frame) and with `TruncatedFrameError`
 * when the input ends mid-frame.
 *
 * @example
 * ```ts
 * import { encodeFrame, FrameDecoderStream } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const bytes = new Uint8Array([...encodeFrame(new Uint8Array([1])), ...encodeFrame(new Uint8Array([2, 3]))]);
 * const frames = await Array.fromAsync(ReadableStream.from([bytes]).pipeThrough(new FrameDecoderStream()));
 * assert.deepEqual(frames, [new Uint8Array([1]), new Uint8Array([2, 3])]);
 * ```
 */
export class FrameDecoderStream extends TransformStream<Uint8Array, Uint8Array> {
  /**
   * Creates a decoder stream.
   *
   * @param options Limits; see {@linkcode FrameDecoderOptions}.
   * @throws {RangeError} When `maxFrameBytes` is out of range.
   */
  constructor(options: FrameDecoderOptions = {}) {
    const decoder = new FrameDecoder(options);
    super({
      transform(chunk, controller) {
        decoder.push(chunk);
        for (let frame = decoder.next(); frame !== undefined; frame = decoder.next()) {
          controller.enqueue(frame);
        }
      },
      flush() {
        decoder.end();
      },
    });
  }
}
