// The NDJSON line splitting state behind NdjsonDecoderStream, and behind the JSON-RPC
// wire's synchronous frame splitter.

import { FrameTooLargeError } from "../errors.ts";
import { findByte } from "./_packer.ts";
import { integerOption } from "../_options.ts";
import type { FrameSink } from "./_frame_sink.ts";

const LF = 0x0a;
const CR = 0x0d;

/** The NDJSON line splitting state, pushing each whole line into a {@linkcode FrameSink}: the pieces of a line that spans chunks. */
export class LineSplitter {
  readonly #max: number;
  readonly #limitName: string;
  #parts: Uint8Array[] = [];
  #partBytes = 0;

  /** `limitName` is the option that set `maxLineBytes`, for the error message. */
  constructor(maxLineBytes: number, limitName = "maxLineBytes") {
    this.#max = integerOption(limitName, maxLineBytes, 0);
    this.#limitName = limitName;
  }

  push(chunk: Uint8Array, out: FrameSink): void {
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

  end(out: FrameSink): void {
    if (this.#partBytes > 0) this.#emit(this.#join(), out);
  }

  #emit(line: Uint8Array, out: FrameSink): void {
    let length = line.length;
    if (length > 0 && line[length - 1] === CR) length--;
    if (length === 0) return;
    this.#checkLength(length);
    out.enqueue(length === line.length ? line : line.subarray(0, length));
  }

  #checkLength(length: number): void {
    if (length > this.#max) {
      throw new FrameTooLargeError(length, this.#max, { limitName: this.#limitName });
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
