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

  constructor(decoder: PushDecoder) {
    this.#decoder = decoder;
  }

  enqueue(frame: Uint8Array): void {
    this.#frames.push(frame);
  }

  /** Adds a chunk; its frames are views of it where they fit. @throws {FramingError} */
  push(chunk: Uint8Array): void {
    this.#decoder.push(chunk, this);
  }

  /** The next whole frame, or undefined. */
  next(): Uint8Array | undefined {
    const frames = this.#frames;
    if (this.#head === frames.length) {
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
    this.#decoder.end(this);
  }

  /** Frames are views of the chunks read: none can be taken back. */
  recycle(_item: Uint8Array): boolean {
    return false;
  }
}

const EMPTY = new Uint8Array(0);
