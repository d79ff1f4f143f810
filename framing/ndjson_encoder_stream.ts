/**
 * A stream pair from payloads to newline-delimited bytes, coalescing small lines.
 *
 * @module
 */

import { coalescingPair } from "./_coalescing_pair.ts";
import { DEFAULT_MAX_BATCH_BYTES, LinePacker } from "./_packer.ts";
import { DEFAULT_MAX_LINE_BYTES } from "./ndjson_decoder_stream.ts";

/**
 * Options for {@linkcode NdjsonEncoderStream}.
 *
 * @example
 * ```ts
 * import { NdjsonEncoderStream, type NdjsonEncoderOptions } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const options: NdjsonEncoderOptions = { maxLineBytes: 1024 };
 * const writer = new NdjsonEncoderStream(options).writable.getWriter();
 * await assert.rejects(writer.write(new Uint8Array(2048)), { name: "FrameTooLargeError" });
 * ```
 */
export interface NdjsonEncoderOptions {
  /**
   * The largest chunk small lines are coalesced into, in bytes. A line longer than this is
   * passed on as its own chunk without copying, its `\n` starting the next chunk.
   *
   * @default {DEFAULT_MAX_BATCH_BYTES} (64 KiB)
   */
  maxBatchBytes?: number;
  /**
   * The longest payload accepted. A longer one is refused with `FrameTooLargeError` before
   * anything is sent, since the peer would refuse it anyway.
   *
   * @default {DEFAULT_MAX_LINE_BYTES} (16 MiB)
   */
  maxLineBytes?: number;
}

/**
 * Encodes payloads as lines: each payload, then `\n`. A payload holding a `\n` byte cannot
 * be one line and errors the stream with `FrameSyntaxError` (`JSON.stringify` never emits a
 * raw newline, so JSON text is always safe).
 *
 * Lines are coalesced like {@linkcode FrameEncoderStream}'s frames: those written in one turn,
 * or while the consumer is busy, share a chunk of at most `maxBatchBytes`; a lone line goes
 * out at the end of the microtask turn, never delayed by a timer. The stream takes ownership
 * of the payloads written to it: do not modify one after writing it.
 *
 * @example
 * ```ts
 * import { NdjsonEncoderStream } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const messages = [{ id: 1 }, { id: 2, text: "two\nlines" }];
 * const bytes = ReadableStream.from(messages)
 *   .pipeThrough(new TransformStream({
 *     transform: (value, controller) => controller.enqueue(JSON.stringify(value)),
 *   }))
 *   .pipeThrough(new TextEncoderStream())
 *   .pipeThrough(new NdjsonEncoderStream())
 *   .pipeThrough(new TextDecoderStream());
 * const text = (await Array.fromAsync(bytes)).join("");
 * assert.equal(text, '{"id":1}\n{"id":2,"text":"two\\nlines"}\n');
 * ```
 */
export class NdjsonEncoderStream implements ReadableWritablePair<Uint8Array, Uint8Array> {
  /** Newline-delimited bytes. */
  readonly readable: ReadableStream<Uint8Array>;
  /** Payloads to write, one per line. */
  readonly writable: WritableStream<Uint8Array>;

  /**
   * Creates a line encoder stream pair.
   *
   * @param options Batch and line size limits; see {@linkcode NdjsonEncoderOptions}.
   * @throws {RangeError} When an option is out of range.
   */
  constructor(options: NdjsonEncoderOptions = {}) {
    const { readable, writable } = coalescingPair(
      new LinePacker(
        options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES,
        options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
      ),
    );
    this.readable = readable;
    this.writable = writable;
  }
}
