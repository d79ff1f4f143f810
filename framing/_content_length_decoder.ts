// The Content-Length decoding state behind ContentLengthDecoderStream, and behind the
// JSON-RPC wire's synchronous frame splitter.

import { FrameSyntaxError, FrameTooLargeError, TruncatedFrameError } from "../errors.ts";
import { MAX_HEADER_LENGTH } from "./_packer.ts";
import { DEFAULT_MAX_FRAME_BYTES } from "./frame_decoder.ts";
import { PartialFrame } from "./_large_frames.ts";
import { integerOption } from "../_options.ts";
import type { FrameSink } from "./_frame_sink.ts";

/** The default `maxHeaderBytes`: 8 KiB for a whole header section. */
export const MAX_HEADER_BYTES_DEFAULT: number = 8 * 1024;

const CR = 0x0d;
const LF = 0x0a;

/** The Content-Length decoding state, pushing each whole body into a {@linkcode FrameSink}. */
export class ContentLengthDecoder {
  readonly #maxFrameBytes: number;
  readonly #header: Uint8Array;
  #headerFill = 0;
  // The body being read: its length, or -1 while reading a header section.
  #bodyLength = -1;
  #partial: PartialFrame | undefined;

  // The public ContentLengthDecoderOptions, structurally: its stream imports this file.
  constructor(options: { maxFrameBytes?: number; maxHeaderBytes?: number } = {}) {
    const maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    const maxHeaderBytes = options.maxHeaderBytes ?? MAX_HEADER_BYTES_DEFAULT;
    this.#maxFrameBytes = integerOption("maxFrameBytes", maxFrameBytes, 0, MAX_HEADER_LENGTH);
    this.#header = new Uint8Array(integerOption("maxHeaderBytes", maxHeaderBytes, 4, 1 << 24));
  }

  push(chunk: Uint8Array, out: FrameSink): void {
    const size = chunk.length;
    let offset = 0;
    while (offset < size) {
      if (this.#bodyLength < 0) {
        offset = this.#readHeader(chunk, offset);
        if (this.#bodyLength < 0) return;
      }
      const length = this.#bodyLength;
      const partial = this.#partial;
      if (partial !== undefined) {
        offset = partial.take(chunk, offset);
        if (partial.fill < length) return;
        this.#partial = undefined;
        this.#bodyLength = -1;
        out.enqueue(partial.bytes);
      } else if (size - offset >= length) {
        this.#bodyLength = -1;
        out.enqueue(chunk.subarray(offset, offset + length));
        offset += length;
      } else {
        this.#partial = new PartialFrame(length);
        this.#partial.take(chunk, offset);
        return;
      }
    }
    // A header announcing an empty body may end exactly at the end of the chunk.
    if (this.#bodyLength === 0) {
      this.#bodyLength = -1;
      out.enqueue(new Uint8Array(0));
    }
  }

  end(): void {
    if (this.#bodyLength > 0) {
      const have = this.#partial?.fill ?? 0;
      throw new TruncatedFrameError(this.#bodyLength - have);
    }
    if (this.#headerFill > 0) {
      // At least the rest of the blank line that closes the section is missing.
      throw new TruncatedFrameError(4 - terminatorSuffix(this.#header, this.#headerFill));
    }
  }

  /**
   * Reads a header section starting at `offset`; returns the offset after it. A section
   * inside the chunk is parsed in place; one that spans chunks is gathered in the header
   * buffer first.
   */
  #readHeader(chunk: Uint8Array, offset: number): number {
    const header = this.#header;
    const max = header.length;
    const size = chunk.length;
    if (this.#headerFill === 0) {
      const limit = Math.min(size, offset + max);
      if (chunk[offset] === LF) throw bareLineFeed(chunk, offset, offset);
      for (let i = offset + 1; i < limit; i++) {
        if (chunk[i] === LF) {
          if (chunk[i - 1] !== CR) throw bareLineFeed(chunk, offset, i);
          if (chunk[i - 2] === LF && chunk[i - 3] === CR && i >= offset + 3) {
            this.#bodyLength = this.#parseHeader(chunk, offset, i - 3);
            return i + 1;
          }
        }
      }
    }
    let fill = this.#headerFill;
    while (offset < size) {
      if (fill === max) {
        throw new FrameSyntaxError(
          `Content-Length header section exceeds maxHeaderBytes (${max}) without ending`,
        );
      }
      const byte = chunk[offset++];
      header[fill++] = byte;
      if (byte !== LF) continue;
      if (fill < 2 || header[fill - 2] !== CR) throw bareLineFeed(header, 0, fill - 1);
      if (fill >= 4 && header[fill - 3] === LF && header[fill - 4] === CR) {
        this.#headerFill = 0;
        this.#bodyLength = this.#parseHeader(header, 0, fill - 4);
        return offset;
      }
    }
    this.#headerFill = fill;
    return offset;
  }

  /** Parses the header lines in `bytes[start, end)`; returns the Content-Length. */
  #parseHeader(bytes: Uint8Array, start: number, end: number): number {
    let length = -1;
    for (let line = start; line < end;) {
      let lineEnd = line;
      while (lineEnd < end && !(bytes[lineEnd] === CR && bytes[lineEnd + 1] === LF)) lineEnd++;
      let colon = line;
      while (colon < lineEnd && bytes[colon] !== COLON) colon++;
      if (colon === line || colon === lineEnd) {
        throw new FrameSyntaxError(
          `Malformed header line ${quote(latin1(bytes, line, lineEnd))}: expected "Name: value"`,
        );
      }
      if (isContentLength(bytes, line, colon)) {
        const value = parseDecimal(bytes, colon + 1, lineEnd);
        if (value < 0) {
          const text = latin1(bytes, colon + 1, lineEnd).trim();
          throw new FrameSyntaxError(
            `Invalid Content-Length ${quote(text)}: expected a byte count`,
          );
        }
        if (length !== -1) {
          throw new FrameSyntaxError(`Content-Length given twice (${length} and ${value})`);
        }
        length = value;
      }
      line = lineEnd + 2;
    }
    if (length === -1) {
      throw new FrameSyntaxError(
        `Header section without Content-Length: ${quote(latin1(bytes, start, end))}`,
      );
    }
    if (length > this.#maxFrameBytes) {
      throw new FrameTooLargeError(length, this.#maxFrameBytes);
    }
    return length;
  }
}

const COLON = 0x3a;
const NAME = "content-length";

/** Whether `bytes[start, end)`, spaces trimmed, is `Content-Length` in any case. */
function isContentLength(bytes: Uint8Array, start: number, end: number): boolean {
  while (start < end && isSpace(bytes[start])) start++;
  while (end > start && isSpace(bytes[end - 1])) end--;
  if (end - start !== NAME.length) return false;
  for (let i = 0; i < NAME.length; i++) {
    const byte = bytes[start + i];
    const expected = NAME.charCodeAt(i);
    // Setting the 0x20 bit lowercases an ASCII letter; '-' must match as is.
    if (byte !== expected && (expected === 0x2d || (byte | 0x20) !== expected)) return false;
  }
  return true;
}

/** The decimal number in `bytes[start, end)`, spaces trimmed: 1 to 15 digits, else -1. */
function parseDecimal(bytes: Uint8Array, start: number, end: number): number {
  while (start < end && isSpace(bytes[start])) start++;
  while (end > start && isSpace(bytes[end - 1])) end--;
  if (end === start || end - start > 15) return -1;
  let value = 0;
  for (let i = start; i < end; i++) {
    const digit = bytes[i] - 0x30;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x09;
}

/**
 * The error of the `\n` at `lf`, without its `\r`, in the header section that starts at
 * `start`. Header lines end in `\r\n`, and no header value holds a line feed: a peer ending its
 * lines in `\n` alone would otherwise wait for an answer while the decoder waits for a
 * `\r\n\r\n` that never comes.
 */
function bareLineFeed(bytes: Uint8Array, start: number, lf: number): FrameSyntaxError {
  let line = lf;
  while (line > start && bytes[line - 1] !== LF) line--;
  let colon = line;
  while (colon < lf && bytes[colon] !== COLON) colon++;
  const what = colon < lf && isContentLength(bytes, line, colon)
    ? "Invalid Content-Length line"
    : "Malformed header line";
  return new FrameSyntaxError(
    `${what} ${quote(latin1(bytes, line, lf))}: it ends in a bare "\\n", ` +
      'where header lines end in "\\r\\n"',
  );
}

const TERMINATOR = [CR, LF, CR, LF];

/** How many bytes of `\r\n\r\n` the first `fill` bytes of `header` end with (0 to 3). */
function terminatorSuffix(header: Uint8Array, fill: number): number {
  for (let n = Math.min(3, fill); n > 0; n--) {
    let match = true;
    for (let i = 0; i < n; i++) {
      if (header[fill - n + i] !== TERMINATOR[i]) match = false;
    }
    if (match) return n;
  }
  return 0;
}

function latin1(bytes: Uint8Array, start: number, end: number): string {
  let text = "";
  for (let i = start; i < end; i += 4096) {
    text += String.fromCharCode(...bytes.subarray(i, Math.min(end, i + 4096)));
  }
  return text;
}

/** Quotes untrusted header text for an error message, shortened. */
function quote(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}
