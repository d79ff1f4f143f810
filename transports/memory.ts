/**
 * An in-memory transport pair, for tests and benchmarks.
 *
 * @module
 */

import { TransportClosedError } from "../errors.ts";
import type { Transport } from "./types.ts";

/** Options for {@linkcode memoryPair}. */
export interface MemoryPairOptions {
  /**
   * Bytes each direction buffers before a writer waits for the reader.
   *
   * @default {1048576} (1 MiB)
   */
  highWaterMark?: number;
}

/**
 * Creates two connected in-memory transports: bytes written to one are read from the other.
 * Chunks pass by reference, with no copy; like every transport, the pair applies
 * backpressure and follows the close semantics of `Transport`.
 *
 * @param options Buffer size; see {@linkcode MemoryPairOptions}.
 * @returns The two ends.
 *
 * @example
 * ```ts
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * await using pair = asyncDisposableStack(memoryPair());
 * const [a, b] = pair.ends;
 * const writer = a.writable.getWriter();
 * await writer.write(new TextEncoder().encode("ping"));
 * const { value } = await b.readable.getReader().read();
 * assert.equal(new TextDecoder().decode(value), "ping");
 * writer.releaseLock();
 *
 * function asyncDisposableStack<T extends AsyncDisposable>(ends: T[]) {
 *   return { ends, [Symbol.asyncDispose]: () => Promise.all(ends.map((e) => e[Symbol.asyncDispose]())).then(() => {}) };
 * }
 * ```
 */
export function memoryPair(options: MemoryPairOptions = {}): [Transport, Transport] {
  const highWaterMark = options.highWaterMark ?? 1024 * 1024;
  const aToB = new Pipe(highWaterMark);
  const bToA = new Pipe(highWaterMark);
  return [new MemoryTransport(bToA, aToB), new MemoryTransport(aToB, bToA)];
}

/** One direction: an identity stream whose queue is bounded by bytes. */
class Pipe {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  #controller!: TransformStreamDefaultController<Uint8Array>;

  constructor(highWaterMark: number) {
    const strategy = { highWaterMark, size: (chunk: Uint8Array) => chunk.byteLength };
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>(
      { start: (controller) => void (this.#controller = controller) },
      strategy,
      strategy,
    );
    this.readable = readable;
    this.writable = writable;
  }

  /** The reading end stops: its reader sees the end, the writing end's writes fail. */
  terminate(): void {
    try {
      this.#controller.terminate();
    } catch {
      // Already closed or errored.
    }
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

class MemoryTransport implements Transport {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  readonly #incoming: Pipe;
  readonly #outgoing: Pipe;
  readonly #sink: WritableStreamDefaultWriter<Uint8Array>;
  #closing: Promise<void> | undefined;
  #open = true;

  constructor(incoming: Pipe, outgoing: Pipe) {
    this.#incoming = incoming;
    this.#outgoing = outgoing;
    this.readable = incoming.readable;
    const sink = this.#sink = outgoing.writable.getWriter();
    sink.closed.catch(() => {});
    this.writable = new WritableStream<Uint8Array>({
      write: async (chunk) => {
        if (!this.#open) throw new TransportClosedError("Memory transport is closed");
        try {
          await sink.write(chunk);
        } catch (cause) {
          throw new TransportClosedError("Memory transport peer is closed", { cause });
        }
      },
      close: () => this.close(),
      abort: (reason) => this.abort(reason),
    });
  }

  close(): Promise<void> {
    return this.#closing ??= this.#close();
  }

  async #close(): Promise<void> {
    this.#open = false;
    await this.#sink.close().catch(() => {});
    this.#incoming.terminate();
  }

  abort(reason?: unknown): Promise<void> {
    this.#open = false;
    const error = reason ?? new TransportClosedError("Memory transport aborted");
    this.#outgoing.error(error);
    this.#incoming.error(error);
    return this.#closing ??= Promise.resolve();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
