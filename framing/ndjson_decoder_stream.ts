/**
 * A `TransformStream` from bytes to lines: newline-delimited framing, for JSON peers.
 *
 * @module
 */

import { FrameTooLargeError } from "../errors.ts";
import { findByte } from "./_find_byte.ts";
import { integerOption } from "../_options.ts";

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

const LF = 0x0a;
const CR = 0x0d;

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

/** The line splitting state: the pieces of a line that spans chunks. */
class LineSplitter {
  readonly #max: number;
  #parts: Uint8Array[] = [];
  #partBytes = 0;

  constructor(maxLineBytes: number) {
    this.#max = integerOption("maxLineBytes", maxLineBytes, 0);
  }

  push(chunk: Uint8Array, out: TransformStreamDefaultController<Uint8Array>): void {
    let start = 0;
    for (let lf = findByte(chunk, LF); lf !== -1; lf = findByte(chunk, LF, start)) {
      if (this.#partBytes === 0) {
        this.#emit(chunk.subarray(start, lf), out);
      } else {
        // Checked before joining, so an overlong line is never copied.
        const parts = this.#parts;
        const last = lf > 0 ? chunk[lf - 1] : parts[parts.length - 1].at(-1);
        this.#checkLength(this.#partBytes + lf - (last === CR ? 1 : 0));
        this.#parts.push(chunk.subarray(0, lf));
        this.#emit(this.#join(), out);
      }
      start = lf + 1;
    }
    const rest = chunk.length - start;
    if (rest === 0) return;
    const pending = this.#partBytes + rest;
    // One byte over the limit may still be the `\r` of a `\r\n`.
    if (pending > this.#max && !(pending === this.#max + 1 && chunk[chunk.length - 1] === CR)) {
      this.#checkLength(pending);
    }
    this.#parts.push(chunk.subarray(start));
    this.#partBytes = pending;
  }

  end(out: TransformStreamDefaultController<Uint8Array>): void {
    if (this.#partBytes > 0) this.#emit(this.#join(), out);
  }

  #emit(line: Uint8Array, out: TransformStreamDefaultController<Uint8Array>): void {
    let length = line.length;
    if (length > 0 && line[length - 1] === CR) length--;
    if (length === 0) return;
    this.#checkLength(length);
    out.enqueue(length === line.length ? line : line.subarray(0, length));
  }

  #checkLength(length: number): void {
    if (length > this.#max) {
      throw new FrameTooLargeError(length, this.#max, { limitName: "maxLineBytes" });
    }
  }

  #join(): Uint8Array {
    const parts = this.#parts;
    let size = 0;
    for (const part of parts) size += part.length;
    const line = new Uint8Array(size);
    let offset = 0;
    for (const part of parts) {
      line.set(part, offset);
      offset += part.length;
    }
    this.#parts = [];
    this.#partBytes = 0;
    return line;
  }
}
