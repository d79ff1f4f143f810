/**
 * A `TransformStream` from bytes to lines: newline-delimited framing, for JSON peers.
 *
 * @module
 */

import { LineSplitter } from "./_line_splitter.ts";

/**
 * The default `maxLineBytes`: 16 MiB.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_LINE_BYTES } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_MAX_LINE_BYTES, 16 * 1024 * 1024);
 * ```
 */
export const DEFAULT_MAX_LINE_BYTES: number = 16 * 1024 * 1024;

/**
 * Options for {@linkcode NdjsonDecoderStream}.
 *
 * @example
 * ```ts
 * import { NdjsonDecoderStream, type NdjsonDecoderOptions } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const options: NdjsonDecoderOptions = { maxLineBytes: 4 };
 * const lines = ReadableStream.from([new TextEncoder().encode("12345\n")])
 *   .pipeThrough(new NdjsonDecoderStream(options));
 * await assert.rejects(Array.fromAsync(lines), { name: "FrameTooLargeError" });
 * ```
 */
export interface NdjsonDecoderOptions {
  /**
   * The longest line accepted, in bytes, not counting its `\r\n` or `\n`. A longer line
   * raises `FrameTooLargeError` as soon as more than this many bytes of it have arrived,
   * without buffering the rest.
   *
   * @default {DEFAULT_MAX_LINE_BYTES} (16 MiB)
   */
  maxLineBytes?: number;
}

/**
 * Splits a byte stream into lines, one `Uint8Array` per line without its `\n` (or `\r\n`),
 * skipping empty lines. Each line is typically one JSON document (NDJSON, JSON Lines); the
 * stream does not parse it.
 *
 * A line that lies inside one chunk is a view (`subarray`) of that chunk; a line that spans
 * chunks is copied once into a buffer of its exact size, so the work is linear in the bytes
 * whatever the chunking. When the input ends with an unterminated line, that line is still
 * emitted: a peer that writes its last message and closes without a newline loses nothing,
 * and a truncated JSON document is then the codec's error to report.
 *
 * @example
 * ```ts
 * import { NdjsonDecoderStream } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const input = ReadableStream.from(['{"a":1}\r\n\n{"b"', ':2}\n{"c":3}'])
 *   .pipeThrough(new TextEncoderStream());
 * const lines = await Array.fromAsync(input.pipeThrough(new NdjsonDecoderStream()));
 * assert.deepEqual(lines.map((line) => JSON.parse(new TextDecoder().decode(line))), [
 *   { a: 1 },
 *   { b: 2 },
 *   { c: 3 },
 * ]);
 * ```
 */
export class NdjsonDecoderStream extends TransformStream<Uint8Array, Uint8Array> {
  /**
   * Creates a line decoder.
   *
   * @param options The line length limit; see {@linkcode NdjsonDecoderOptions}.
   * @throws {RangeError} When `maxLineBytes` is not a non-negative integer.
   */
  constructor(options: NdjsonDecoderOptions = {}) {
    const splitter = new LineSplitter(options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES);
    super({
      transform(chunk, controller) {
        splitter.push(chunk, controller);
      },
      flush(controller) {
        splitter.end(controller);
      },
    });
  }
}
