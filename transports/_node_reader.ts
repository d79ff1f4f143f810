// A Node Readable (a socket, stdin) read the way a ByteChannel reads, for Node and Bun: chunks
// queue while the reader is behind, the stream pauses once `readAheadBytes` wait and resumes
// as they are taken, and its end or error reaches the reader after the bytes before it.

import type { Readable } from "node:stream";
import { Fifo } from "../_fifo.ts";

/** Reads `stream` one chunk at a time; see the module comment. */
export class NodeReader {
  readonly #stream: Readable;
  readonly #readAheadBytes: number;
  readonly #queue = new Fifo<Uint8Array>();
  #queued = 0;
  #ended = false;
  /** The stream's error, as the reads see it: none once they had the end. */
  #failure: Error | undefined;
  /** The stream's error, whenever it came. */
  #error: Error | undefined;
  #reading: PromiseWithResolvers<Uint8Array | null> | undefined;

  /** `isEnd` tells an error of `stream` that is in truth its peer's clean end (no failure). */
  constructor(stream: Readable, readAheadBytes: number, isEnd?: (error: Error) => boolean) {
    this.#stream = stream;
    this.#readAheadBytes = readAheadBytes;
    stream.on("data", (data: Uint8Array) => this.#data(data));
    stream.on("end", () => this.end());
    stream.on("error", (error: Error) => {
      this.#error ??= error;
      // After the peer's end the reads are complete: an error now is a write's (EPIPE, a
      // reset answering bytes sent to a peer that is gone), and the reads still end cleanly.
      if (!this.#ended && !isEnd?.(error)) this.#failure ??= error;
      this.end();
    });
    stream.on("close", () => this.end());
  }

  /** The stream's error, once it failed (even after the reads ended). */
  get failure(): Error | undefined {
    return this.#error;
  }

  /** The next chunk, or `null` at the end; rejects with the stream's error. */
  read(): Promise<Uint8Array | null> {
    const chunk = this.#queue.shift();
    if (chunk !== undefined) {
      this.#queued -= chunk.length;
      if (this.#queued < this.#readAheadBytes && this.#stream.isPaused()) this.#stream.resume();
      return Promise.resolve(chunk);
    }
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (this.#ended) return Promise.resolve(null);
    this.#reading = Promise.withResolvers();
    return this.#reading.promise;
  }

  #data(data: Uint8Array): void {
    // A plain view: the runtime's Buffer is a subclass, which codecs refuse to pass on as is.
    const chunk = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const reading = this.#reading;
    if (reading !== undefined) {
      this.#reading = undefined;
      reading.resolve(chunk);
      return;
    }
    this.#queue.push(chunk);
    this.#queued += chunk.length;
    if (this.#queued >= this.#readAheadBytes) this.#stream.pause();
  }

  /** Ends reading: a pending read gets `null` (or the stream's error), and so do later ones. */
  end(): void {
    this.#ended = true;
    const reading = this.#reading;
    if (reading === undefined) return;
    this.#reading = undefined;
    if (this.#failure !== undefined) reading.reject(this.#failure);
    else reading.resolve(null);
  }
}
