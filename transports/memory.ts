/**
 * An in-memory transport pair, for tests and benchmarks.
 *
 * @module
 */

import { TransportClosedError } from "../errors.ts";
import { type ByteChannel, ByteChannelTransport } from "./_byte_channel_transport.ts";
import type { Transport } from "./types.ts";

// The types this module's API shows, so that its documentation is complete on its own.
export type { Transport };
import { numberOption } from "../_options.ts";

/** The default {@linkcode MemoryPairOptions.highWaterMark}: 1 MiB per direction. */
export const DEFAULT_MEMORY_HIGH_WATER_MARK: number = 1024 * 1024;

/** Options for {@linkcode memoryPair}. */
export interface MemoryPairOptions {
  /**
   * Bytes each direction buffers before a writer waits for the reader.
   *
   * @default {DEFAULT_MEMORY_HIGH_WATER_MARK} (1 MiB)
   */
  highWaterMark?: number;
}

/**
 * Creates two connected in-memory transports: bytes written to one are read from the other.
 * Each chunk is copied as it is written, as a socket's kernel buffer would: the writer may
 * reuse its bytes once the write resolved, and the reader owns what it reads. Like every
 * transport the pair applies backpressure and follows the close semantics of
 * `Transport`; `abort()` errors the peer's `readable` with `TransportClosedError`.
 *
 * @param options Buffer size; see {@linkcode MemoryPairOptions}.
 * @returns The two ends.
 *
 * @example
 * ```ts
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * const [a, b] = memoryPair();
 * const writer = a.writable.getWriter();
 * await writer.write(new TextEncoder().encode("ping"));
 * const { value } = await b.readable.getReader().read();
 * assert.equal(new TextDecoder().decode(value), "ping");
 * writer.releaseLock();
 * await a.close();
 * await b.close();
 * ```
 */
export function memoryPair(options: MemoryPairOptions = {}): [Transport, Transport] {
  const highWaterMark = options.highWaterMark ?? DEFAULT_MEMORY_HIGH_WATER_MARK;
  numberOption("highWaterMark", highWaterMark, 0);
  const aToB = new Pipe(highWaterMark);
  const bToA = new Pipe(highWaterMark);
  return [
    new ByteChannelTransport(new MemoryChannel(bToA, aToB)),
    new ByteChannelTransport(new MemoryChannel(aToB, bToA)),
  ];
}

/** One direction: an identity stream whose queue is bounded by bytes. */
class Pipe {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  #controller!: TransformStreamDefaultController<Uint8Array>;

  constructor(highWaterMark: number) {
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>(
      { start: (controller) => void (this.#controller = controller) },
      undefined,
      { highWaterMark, size: (chunk) => chunk.byteLength },
    );
    this.readable = readable;
    this.writable = writable;
  }

  /** Both ends fail with `reason`. */
  error(reason: unknown): void {
    try {
      this.#controller.error(reason);
    } catch {
      // Already closed or errored.
    }
  }
}

class MemoryChannel implements ByteChannel {
  readonly label = "memory transport";
  readonly #incoming: Pipe;
  readonly #outgoing: Pipe;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;

  constructor(incoming: Pipe, outgoing: Pipe) {
    this.#incoming = incoming;
    this.#outgoing = outgoing;
    this.#reader = incoming.readable.getReader();
    this.#writer = outgoing.writable.getWriter();
    this.#writer.closed.catch(() => {});
    this.#reader.closed.catch(() => {});
  }

  async read(): Promise<Uint8Array | null> {
    const { done, value } = await this.#reader.read();
    return done ? null : value;
  }

  write(chunk: Uint8Array): Promise<void> {
    // A copy, so that the reader never sees a writer reuse its buffer (a channel passes a
    // stream producer's own bytes through, and lets it refill them once they are written).
    return this.#writer.write(chunk.slice());
  }

  closeWrite(): Promise<void> {
    return this.#writer.close();
  }

  async close(abortive: boolean): Promise<void> {
    if (abortive) {
      const error = new TransportClosedError("The memory transport's peer aborted");
      this.#outgoing.error(error);
      this.#incoming.error(error);
      return;
    }
    // The peer reads what is queued, then the end; its writes to us fail from now on.
    await this.#writer.close().catch(() => {});
    await this.#reader.cancel(new TransportClosedError("The memory transport's peer closed"))
      .catch(() => {});
  }
}
