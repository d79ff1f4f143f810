/**
 * A stream pair from payloads to LSP-style frames (`Content-Length: N\r\n\r\n` and N bytes),
 * coalescing small frames.
 *
 * @module
 */

import { coalescingPair } from "./_coalescing_pair.ts";
import { ContentLengthPacker, DEFAULT_MAX_BATCH_BYTES } from "./_packer.ts";
import { DEFAULT_MAX_FRAME_BYTES } from "./frame_decoder.ts";
import type { FrameEncoderOptions } from "./frame_encoder_stream.ts";

/**
 * Encodes payloads in the Language Server Protocol's framing: a `Content-Length: N` header,
 * an empty line (`\r\n\r\n` in all), then the payload of N bytes. No other header is
 * written; `Content-Type` defaults to UTF-8 JSON in LSP.
 *
 * Frames are coalesced like {@linkcode FrameEncoderStream}'s: those written in one turn, or
 * while the consumer is busy, share a chunk of at most `maxBatchBytes`; a lone frame goes out
 * at the end of the microtask turn, never delayed by a timer; a frame larger than
 * `maxBatchBytes` is passed on without copying its payload. The stream takes ownership of the
 * payloads written to it: do not modify one after writing it.
 *
 * @example
 * ```ts
 * import { ContentLengthEncoderStream } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const bytes = ReadableStream.from(['{"jsonrpc":"2.0"}'])
 *   .pipeThrough(new TextEncoderStream())
 *   .pipeThrough(new ContentLengthEncoderStream())
 *   .pipeThrough(new TextDecoderStream());
 * const text = (await Array.fromAsync(bytes)).join("");
 * assert.equal(text, 'Content-Length: 17\r\n\r\n{"jsonrpc":"2.0"}');
 * ```
 */
export class ContentLengthEncoderStream implements ReadableWritablePair<Uint8Array, Uint8Array> {
  /** Encoded bytes. */
  readonly readable: ReadableStream<Uint8Array>;
  /** Payloads to encode, one per frame. */
  readonly writable: WritableStream<Uint8Array>;

  /**
   * Creates an encoder stream pair.
   *
   * @param options Batch and frame size limits; see {@linkcode FrameEncoderOptions}.
   * @throws {RangeError} When an option is out of range.
   */
  constructor(options: FrameEncoderOptions = {}) {
    const { readable, writable } = coalescingPair(
      new ContentLengthPacker(
        options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES,
        options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
      ),
    );
    this.readable = readable;
    this.writable = writable;
  }
}
