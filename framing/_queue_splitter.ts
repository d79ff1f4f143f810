// A synchronous frame splitter over a decoder that pushes frames into a sink: the shape the
// channel's read loop drains (push a chunk, take frames with next() until undefined), for
// the NDJSON and Content-Length framings.

import type { FrameSink } from "./_frame_sink.ts";

/** A decoder that pushes each whole frame of a chunk into a sink. */
export interface PushDecoder {
  push(chunk: Uint8Array, out: FrameSink): void;
  end(out: FrameSink): void;
}

/** Splits chunks into frames with `decoder`, handing them out one at a time. */
export class QueueSplitter implements FrameSink {
  readonly #decoder: PushDecoder;
  #frames: Uint8Array[] = [];
  #head = 0;
  /**
   * The error a chunk's bytes ran into, thrown once the frames before it in the stream are
   * taken: as FrameDecoder does, so that what is read before a peer's malformed bytes does
   * not depend on where the reads happened to split them.
   */
  #error: unknown = undefined;
  #failed = false;

  constructor(decoder: PushDecoder) {
    this.#decoder = decoder;
  }

  enqueue(frame: Uint8Array): void {
    this.#frames.push(frame);
  }

  /**
   * Adds a chunk; its frames are views of it where they fit.
   * @throws {FramingError} When its bytes are malformed before any whole frame; else
   * {@linkcode next} throws it once the frames before the error are taken.
   */
  push(chunk: Uint8Array): void {
    if (this.#failed) throw this.#error;
    try {
      this.#decoder.push(chunk, this);
    } catch (error) {
      this.#failed = true;
      this.#error = error;
      // Nothing came before the error: throw it now, as a push without frames would.
      if (this.#head === this.#frames.length) throw error;
    }
  }

  /** The next whole frame, or undefined. @throws {FramingError} See {@linkcode push}. */
  next(): Uint8Array | undefined {
    const frames = this.#frames;
    if (this.#head === frames.length) {
      if (this.#failed) throw this.#error;
      if (this.#head > 0) {
        frames.length = 0;
        this.#head = 0;
      }
      return undefined;
    }
    const frame = frames[this.#head];
    frames[this.#head++] = EMPTY;
    return frame;
  }

  /** The input ended. @throws {FramingError} Inside a frame. */
  end(): void {
    if (this.#failed) throw this.#error;
    this.#decoder.end(this);
  }

  /** Frames are views of the chunks read: none can be taken back. */
  recycle(_item: Uint8Array): boolean {
    return false;
  }
}

const EMPTY = new Uint8Array(0);
