/**
 * Reading a transport for a {@linkcode FrameDecoder}, large frames straight into their own
 * buffers.
 *
 * @module
 */

import type { FrameDecoder } from "./frame_decoder.ts";

/**
 * Where a {@linkcode FrameReader} reads: a byte stream, and optionally a way to read the next
 * bytes straight into a given buffer, and one to read them without the stream. Every
 * `Transport` is one; the Unix socket, TCP and stdio transports have `readInto` and
 * `readChunk`.
 *
 * @example
 * ```ts
 * import type { FrameSource } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const source: FrameSource = { readable: ReadableStream.from([new Uint8Array([0, 0, 0, 0])]) };
 * assert.equal(source.readInto, undefined);
 * ```
 */
export interface FrameSource {
  /** The bytes. */
  readonly readable: ReadableStream<Uint8Array>;
  /**
   * Reads the next bytes into `view` instead of through `readable`, whose reader the caller
   * holds with no read pending: resolves with the bytes read, a view of the start of `view`
   * (or of the buffer a transfer moved it to), or `null` once the stream has ended.
   */
  readonly readInto?: ((view: Uint8Array) => Promise<Uint8Array | null>) | undefined;
  /**
   * Reads the next chunk without `readable`: resolves with it, or `null` once the bytes have
   * ended. A source that has it is read only this way and with `readInto`; its `readable` is
   * never touched, so it need not even be created.
   */
  readonly readChunk?: (() => Promise<Uint8Array | null>) | undefined;
}

/**
 * Reads a {@linkcode FrameSource} for a {@linkcode FrameDecoder}: a drop-in for the stream's
 * default reader in a parse loop (`read()`, push the chunk, drain `next()`), which reads the
 * rest of a large frame straight into the frame's buffer when the source has `readInto`, so
 * that frame is never copied. It asks the decoder's `readTarget()` before every read.
 *
 * Push every chunk it returns into that decoder, and drain the decoder before the next
 * `read()`.
 *
 * @example
 * ```ts
 * import { encodeFrame, FrameDecoder, FrameReader } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * // A source that delivers at most 1000 bytes per read, the way a socket does.
 * const bytes = encodeFrame(new Uint8Array(100_000).fill(7));
 * let sent = 0;
 * const take = (max: number) => {
 *   const n = Math.min(1000, max, bytes.length - sent);
 *   return bytes.subarray(sent, sent += n);
 * };
 * const source = {
 *   readable: new ReadableStream<Uint8Array>({
 *     pull: (controller) => sent < bytes.length ? controller.enqueue(take(1000)) : controller.close(),
 *   }, { highWaterMark: 0 }),
 *   readInto: (view: Uint8Array) => {
 *     if (sent === bytes.length) return Promise.resolve(null);
 *     const chunk = take(view.length);
 *     view.set(chunk);
 *     return Promise.resolve(view.subarray(0, chunk.length));
 *   },
 * };
 *
 * const decoder = new FrameDecoder();
 * const reader = new FrameReader(source, decoder);
 * const frames: Uint8Array[] = [];
 * for (let r = await reader.read(); !r.done; r = await reader.read()) {
 *   decoder.push(r.value);
 *   for (let frame = decoder.next(); frame !== undefined; frame = decoder.next()) {
 *     frames.push(frame);
 *   }
 * }
 * decoder.end();
 * assert.equal(frames.length, 1);
 * assert.equal(frames[0].length, 100_000);
 * // Only the first read's 996 payload bytes were copied; the rest was read into the frame.
 * assert.equal(decoder.bytesCopied, 996);
 * ```
 */
export class FrameReader {
  readonly #source: FrameSource;
  readonly #decoder: FrameDecoder;
  /** The lock on the source's `readable`; none over a source with `readChunk`. */
  readonly #reader: ReadableStreamDefaultReader<Uint8Array> | undefined;

  /**
   * Locks the source's `readable`, as `getReader()` does, to read frames into `decoder`;
   * over a source with `readChunk`, reads with it instead and leaves `readable` alone.
   *
   * @param source The bytes, e.g. a transport.
   * @param decoder The decoder every chunk read will be pushed into.
   * @throws {TypeError} When the readable is locked already.
   */
  constructor(source: FrameSource, decoder: FrameDecoder) {
    this.#source = source;
    this.#decoder = decoder;
    this.#reader = source.readChunk === undefined ? source.readable.getReader() : undefined;
  }

  /**
   * Reads the next bytes, into the decoder's read target when it offers one.
   *
   * @returns The next chunk, or `done` at the end, as a default reader's `read()`.
   */
  read(): Promise<ReadableStreamReadResult<Uint8Array>> {
    if (this.#source.readInto !== undefined) {
      const target = this.#decoder.readTarget();
      if (target !== undefined) return this.#source.readInto(target).then(toResult);
    }
    return this.#reader?.read() ?? this.#source.readChunk!().then(toResult);
  }

  /**
   * Cancels the stream; a pending `read()` settles. Over a source read with `readChunk` it
   * does nothing: the source's owner ends it (closing a transport settles a pending read).
   *
   * @param reason Passed to the stream's source.
   */
  cancel(reason?: unknown): Promise<void> {
    return this.#reader?.cancel(reason) ?? Promise.resolve();
  }

  /**
   * Reads the next bytes as {@linkcode read} does, resolving with the chunk itself, or `null`
   * at the end: no result object per read.
   *
   * @returns The next chunk, or `null` at the end.
   */
  readBytes(): Promise<Uint8Array | null> {
    const source = this.#source;
    if (source.readInto !== undefined) {
      const target = this.#decoder.readTarget();
      if (target !== undefined) return source.readInto(target);
    }
    return source.readChunk?.() ?? this.#reader!.read().then(fromResult);
  }

  /** Unlocks the stream (if it was locked: not over a source with `readChunk`). */
  releaseLock(): void {
    this.#reader?.releaseLock();
  }
}

function fromResult(result: ReadableStreamReadResult<Uint8Array>): Uint8Array | null {
  return result.done ? null : result.value;
}

function toResult(chunk: Uint8Array | null): ReadableStreamReadResult<Uint8Array> {
  return chunk === null ? { done: true, value: undefined } : { done: false, value: chunk };
}
