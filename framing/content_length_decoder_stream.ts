/**
 * A `TransformStream` from bytes to frames in the Language Server Protocol's framing:
 * `Content-Length: N\r\n\r\n` and N bytes.
 *
 * @module
 */

import { ContentLengthDecoder, MAX_HEADER_BYTES_DEFAULT } from "./_content_length_decoder.ts";

/**
 * The default `maxHeaderBytes`: 8 KiB for a whole header section.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_HEADER_BYTES } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_MAX_HEADER_BYTES, 8192);
 * ```
 */
export const DEFAULT_MAX_HEADER_BYTES: number = MAX_HEADER_BYTES_DEFAULT;

/**
 * Options for {@linkcode ContentLengthDecoderStream}.
 *
 * @example
 * ```ts
 * import {
 *   ContentLengthDecoderStream,
 *   type ContentLengthDecoderOptions,
 * } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const options: ContentLengthDecoderOptions = { maxFrameBytes: 100 };
 * const frames = ReadableStream.from([new TextEncoder().encode("Content-Length: 101\r\n\r\n")])
 *   .pipeThrough(new ContentLengthDecoderStream(options));
 * await assert.rejects(Array.fromAsync(frames), { name: "FrameTooLargeError", size: 101 });
 * ```
 */
export interface ContentLengthDecoderOptions {
  /**
   * The largest body accepted, in bytes. A `Content-Length` announcing more raises
   * `FrameTooLargeError` before any of the body is buffered.
   *
   * @default {DEFAULT_MAX_FRAME_BYTES} (64 MiB)
   */
  maxFrameBytes?: number;
  /**
   * The largest header section accepted, in bytes, its final `\r\n\r\n` included. A header
   * section that grows past it without ending raises `FrameSyntaxError`.
   *
   * @default {DEFAULT_MAX_HEADER_BYTES} (8 KiB)
   */
  maxHeaderBytes?: number;
}

/**
 * Decodes LSP-style framing: a header section of `Name: value` lines, each ending in `\r\n`,
 * closed by an empty line, then a body of exactly `Content-Length` bytes. Headers other than
 * `Content-Length` (such as `Content-Type`) are accepted and ignored; names are matched
 * without regard to case.
 *
 * Errors the stream with `FrameSyntaxError` for a malformed header section (a line without
 * `:`, a missing, repeated or non-numeric `Content-Length`, or a section past
 * `maxHeaderBytes`), `FrameTooLargeError` for a `Content-Length` over `maxFrameBytes`
 * (checked before the body is buffered), and `TruncatedFrameError` when the input ends inside
 * a frame. As with {@linkcode FrameDecoderStream}, a body inside one chunk comes out as a
 * view of it and a body spanning chunks is copied once.
 *
 * @example
 * ```ts
 * import { ContentLengthDecoderStream } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const input = 'Content-Length: 2\r\n\r\n{}Content-Type: x\r\ncontent-length: 4\r\n\r\nnull';
 * const frames = await Array.fromAsync(
 *   ReadableStream.from([input])
 *     .pipeThrough(new TextEncoderStream())
 *     .pipeThrough(new ContentLengthDecoderStream()),
 * );
 * assert.deepEqual(frames.map((f) => new TextDecoder().decode(f)), ["{}", "null"]);
 * ```
 */
export class ContentLengthDecoderStream extends TransformStream<Uint8Array, Uint8Array> {
  /**
   * Creates a decoder stream.
   *
   * @param options Limits; see {@linkcode ContentLengthDecoderOptions}.
   * @throws {RangeError} When a limit is out of range.
   */
  constructor(options: ContentLengthDecoderOptions = {}) {
    const decoder = new ContentLengthDecoder(options);
    super({
      transform(chunk, controller) {
        decoder.push(chunk, controller);
      },
      flush() {
        decoder.end();
      },
    });
  }
}
