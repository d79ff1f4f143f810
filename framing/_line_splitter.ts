// The NDJSON line splitting state behind NdjsonDecoderStream, and behind the JSON-RPC
// wire's synchronous frame splitter.

import { FrameTooLargeError } from "../errors.ts";
import { findByte } from "./_packer.ts";
import { integerOption } from "../_options.ts";
import type { FrameSink } from "./_frame_sink.ts";

const LF = 0x0a;
const CR = 0x0d;

/**
 * A piece of a pending line shorter than this is copied into the staging buffer rather than
 * kept as a view of its chunk: a view costs a couple of hundred bytes of heap whatever its
 * length, so a peer trickling a line a byte per read would otherwise hold that much per byte,
 * far past `maxLineBytes`.
 */
const SMALL_PIECE_BYTES = 512;
/**
 * The staging buffer's size while the pending line is short, the only one kept from line to
 * line, so that an idle splitter holds little.
 */
const FIRST_STAGING_BYTES = 1024;
/** The staging buffer's size once the pending line is longer. */
const STAGING_BYTES = 8 * 1024;

const EMPTY = new Uint8Array(0);

/**
 * The NDJSON line splitting state, pushing each whole line into a {@linkcode FrameSink}: the
 * pieces of a line that spans chunks, large ones as views of their chunks and small ones
 * copied into a staging buffer, so that the memory a pending line holds stays in proportion
 * to its bytes however the peer chunks it.
 */
export class LineSplitter {
  readonly #max: number;
  readonly #limitName: string;
  #parts: Uint8Array[] = [];
  #partBytes = 0;
  /** The last byte of the pending line, for the `\r` of a `\r\n` split between chunks. */
  #lastByte = 0;
  /** Where small pieces are copied; `#staging[#stagedStart, #stagedEnd)` is not in #parts yet. */
  #staging: Uint8Array = EMPTY;
  #stagedStart = 0;
  #stagedEnd = 0;

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
        const last = lf > 0 ? chunk[lf - 1] : this.#lastByte;
        this.#checkLength(this.#partBytes + lf - (last === CR ? 1 : 0));
        this.#emit(this.#join(chunk.subarray(0, lf)), out);
      }
      start = lf + 1;
    }
    const rest = chunk.length - start;
    if (rest === 0) return;
    const pending = this.#partBytes + rest;
    const last = chunk[chunk.length - 1];
    // One byte over the limit may still be the `\r` of a `\r\n`.
    if (pending > this.#max && !(pending === this.#max + 1 && last === CR)) {
      this.#checkLength(pending);
    }
    this.#keep(start === 0 ? chunk : chunk.subarray(start));
    this.#partBytes = pending;
    this.#lastByte = last;
  }

  end(out: FrameSink): void {
    if (this.#partBytes > 0) this.#emit(this.#join(EMPTY), out);
  }

  /** Adds `piece` to the pending line: a view of a large one, a copy of a small one. */
  #keep(piece: Uint8Array): void {
    const length = piece.length;
    if (length >= SMALL_PIECE_BYTES) {
      this.#seal();
      this.#parts.push(piece);
      return;
    }
    if (this.#staging.length - this.#stagedEnd < length) {
      this.#seal();
      this.#staging = new Uint8Array(
        this.#partBytes < STAGING_BYTES ? FIRST_STAGING_BYTES : STAGING_BYTES,
      );
      this.#stagedStart = this.#stagedEnd = 0;
    }
    this.#staging.set(piece, this.#stagedEnd);
    this.#stagedEnd += length;
  }

  /** Moves the staged bytes not yet in #parts there, as one view. */
  #seal(): void {
    if (this.#stagedEnd > this.#stagedStart) {
      this.#parts.push(this.#staging.subarray(this.#stagedStart, this.#stagedEnd));
      this.#stagedStart = this.#stagedEnd;
    }
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

  /** The pending line followed by `last`, in one buffer of its exact size. */
  #join(last: Uint8Array): Uint8Array {
    this.#seal();
    const parts = this.#parts;
    const line = new Uint8Array(this.#partBytes + last.length);
    let offset = 0;
    for (const part of parts) {
      line.set(part, offset);
      offset += part.length;
    }
    line.set(last, offset);
    this.#parts = [];
    this.#partBytes = 0;
    // The staged bytes are copied out: a small staging buffer serves the next line.
    if (this.#staging.length > FIRST_STAGING_BYTES) this.#staging = EMPTY;
    this.#stagedStart = this.#stagedEnd = 0;
    return line;
  }
}
