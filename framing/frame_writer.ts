/**
 * A synchronous, coalescing frame writer over a byte `WritableStream`: the write path the
 * channel uses, where one promise per message would cost more than the message.
 *
 * @module
 */

import { TransportClosedError } from "../errors.ts";
import { DEFAULT_MAX_BATCH_BYTES, FramePacker } from "./_packer.ts";
import { DEFAULT_MAX_FRAME_BYTES } from "./frame_decoder.ts";
import type { FrameEncoderOptions } from "./frame_encoder_stream.ts";

/** The default {@linkcode FrameWriterOptions.highWaterMark}: 1 MiB queued. */
export const DEFAULT_WRITER_HIGH_WATER_MARK: number = 1024 * 1024;

/** Options for {@linkcode FrameWriter}. */
export interface FrameWriterOptions extends FrameEncoderOptions {
  /**
   * Queued bytes at which {@linkcode FrameWriter.desiredSize} reaches zero and
   * {@linkcode FrameWriter.ready} starts waiting. `write` itself never blocks: callers that
   * produce without bound await `ready`.
   *
   * @default {DEFAULT_WRITER_HIGH_WATER_MARK} (1 MiB)
   */
  highWaterMark?: number;
}

/**
 * Writes length-prefixed frames to a byte stream. {@linkcode write} queues a frame
 * synchronously; the frames queued in one turn go out together in one chunk at the end of
 * the microtask turn, and frames queued while a write is in flight are coalesced into the
 * next one. A payload larger than `maxBatchBytes` is written without copying.
 *
 * @example
 * ```ts
 * import { FrameDecoderStream, FrameWriter } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
 * const writer = new FrameWriter(writable);
 * writer.write(new Uint8Array([1]));
 * writer.write(new Uint8Array([2, 3]));
 * const closing = writer.close();
 * const frames = await Array.fromAsync(readable.pipeThrough(new FrameDecoderStream()));
 * await closing;
 * assert.deepEqual(frames, [new Uint8Array([1]), new Uint8Array([2, 3])]);
 * ```
 */
export class FrameWriter {
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #packer: FramePacker;
  readonly #highWaterMark: number;
  #scheduled = false;
  #pumping: Promise<void> | undefined;
  #failure: { error: unknown } | undefined;
  #closing = false;
  #inFlightBytes = 0;
  #readyWaiters: Array<() => void> = [];
  #idleWaiters: Array<() => void> = [];

  /**
   * @param writable The byte stream to write to; the writer holds its lock until
   * {@linkcode close} or {@linkcode abort}.
   * @param options Batch, frame and queue limits; see {@linkcode FrameWriterOptions}.
   */
  constructor(writable: WritableStream<Uint8Array>, options: FrameWriterOptions = {}) {
    this.#writer = writable.getWriter();
    this.#packer = new FramePacker(
      options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES,
      options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
    );
    this.#highWaterMark = options.highWaterMark ?? DEFAULT_WRITER_HIGH_WATER_MARK;
    // A failed write is reported through write()/ready/flush(); keep it from being unhandled.
    this.#writer.closed.catch(() => {});
  }

  /** Bytes that may still be queued before reaching the high-water mark (negative past it). */
  get desiredSize(): number {
    return this.#highWaterMark - this.#packer.pendingBytes - this.#inFlightBytes;
  }

  /**
   * Queues one frame. Never waits; check {@linkcode desiredSize} or await {@linkcode ready}
   * to respect backpressure.
   *
   * @param payload The frame's payload; owned by the writer from now on (do not modify it).
   * @throws {TransportClosedError} After `close()`/`abort()`, or once a write has failed
   * (the failure is its `cause`).
   * @throws {FrameTooLargeError} When the payload exceeds `maxFrameBytes`.
   */
  write(payload: Uint8Array): void {
    this.#assertOpen();
    this.#packer.add(payload);
    if (!this.#scheduled && this.#pumping === undefined) {
      this.#scheduled = true;
      queueMicrotask(() => this.#startPump());
    }
  }

  /** Resolves when the queue is below the high-water mark; rejects once writing failed. */
  get ready(): Promise<void> {
    if (this.#failure) return Promise.reject(this.#closedError());
    if (this.desiredSize > 0) return Promise.resolve();
    return this.#wait(this.#readyWaiters);
  }

  /** Resolves once every frame queued so far has been handed to the byte stream. */
  flush(): Promise<void> {
    if (this.#failure) return Promise.reject(this.#closedError());
    if (this.#packer.empty && this.#pumping === undefined && !this.#scheduled) {
      return Promise.resolve();
    }
    return this.#wait(this.#idleWaiters);
  }

  /** Flushes, then closes the byte stream. Idempotent. */
  async close(): Promise<void> {
    if (this.#closing) return;
    try {
      await this.flush();
    } finally {
      this.#closing = true;
    }
    await this.#writer.close();
  }

  /** Drops queued frames and aborts the byte stream. */
  async abort(reason?: unknown): Promise<void> {
    this.#closing = true;
    this.#packer.take();
    this.#fail(reason ?? new TransportClosedError("FrameWriter aborted"));
    await this.#writer.abort(reason).catch(() => {});
  }

  #assertOpen(): void {
    if (this.#failure) throw this.#closedError();
    if (this.#closing) throw new TransportClosedError("FrameWriter is closed");
  }

  #closedError(): TransportClosedError {
    const cause = this.#failure?.error;
    if (cause instanceof TransportClosedError) return cause;
    return new TransportClosedError("Write failed: the byte stream is closed or errored", {
      cause,
    });
  }

  #wait(waiters: Array<() => void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      waiters.push(() => this.#failure ? reject(this.#closedError()) : resolve());
    });
  }

  #startPump(): void {
    this.#scheduled = false;
    if (this.#failure) return;
    this.#pumping = this.#pump();
  }

  async #pump(): Promise<void> {
    try {
      while (!this.#packer.empty) {
        this.#inFlightBytes = this.#packer.pendingBytes;
        for (const chunk of this.#packer.take()) {
          await this.#writer.write(chunk);
          this.#inFlightBytes -= chunk.length;
          if (this.#readyWaiters.length > 0 && this.desiredSize > 0) {
            wakeAll(this.#readyWaiters.splice(0));
          }
        }
        // Let frames queued by the continuations of this write join the next batch.
        await Promise.resolve();
      }
    } catch (error) {
      this.#fail(error);
    } finally {
      this.#pumping = undefined;
      this.#inFlightBytes = 0;
    }
    wakeAll(this.#readyWaiters.splice(0));
    wakeAll(this.#idleWaiters.splice(0));
  }

  #fail(error: unknown): void {
    this.#failure ??= { error };
    wakeAll(this.#readyWaiters.splice(0));
    wakeAll(this.#idleWaiters.splice(0));
  }
}

function wakeAll(waiters: Array<() => void>): void {
  for (const wake of waiters) wake();
}
