// The one implementation of the Transport contract. Each transport (memory, Unix socket, TCP,
// TLS, stdio on either side) only supplies a ByteChannel: how to read, write, half-close and
// release its OS object. Close semantics, flushing and error mapping live here, once.

import { TransportClosedError } from "../errors.ts";
import type { Transport } from "./types.ts";

/** What a transport needs from the object under it. */
export interface ByteChannel {
  /** Names the channel in error messages, e.g. `Unix socket /tmp/app.sock`. */
  readonly label: string;
  /**
   * Resolves with the next bytes, as a chunk the reader may keep (never written to again), or
   * `null` at the end of the stream. Called again only after the previous call settled.
   */
  read(): Promise<Uint8Array | null>;
  /**
   * Reads straight into `view`: resolves with the bytes read, a view of the start of `view`
   * (or of the buffer a transfer moved it to), or `null` at the end of the stream. Optional;
   * a channel that has it gives its transport a `readInto`. Called only when no other
   * `read` or `readInto` is pending.
   */
  readInto?(view: Uint8Array): Promise<Uint8Array | null>;
  /**
   * Writes all of `chunk`. Returns `undefined` when the bytes were written synchronously,
   * which spares a promise per chunk. Called again only after the previous call settled.
   */
  write(chunk: Uint8Array): Promise<void> | undefined;
  /** Ends the outgoing direction: the peer's reads end once they have every byte. */
  closeWrite(): Promise<void>;
  /**
   * Releases everything. A pending `read` settles (with `null` or an error). Graceful unless
   * `abortive`; called once.
   */
  close(abortive: boolean): Promise<void>;
  /**
   * Frees the memory the channel reads into. Optional; called once, after `close` and once no
   * read is pending.
   */
  freeBuffers?(): void;
}

/** What `pull` returns: the read it starts is followed by `#reading`, not by the stream. */
const RESOLVED: Promise<void> = Promise.resolve();

/** The most bytes the writable queues before `writer.ready` waits: 64 KiB. */
const WRITE_HIGH_WATER_MARK = 64 * 1024;

/**
 * A Transport over a ByteChannel.
 *
 * Writes accepted by `writable` before `close()` are flushed, even when nobody awaited them:
 * the writable's size function counts chunks as they enter its queue, so `close()` knows how
 * many to let through before refusing the rest with TransportClosedError.
 *
 * Over a channel that can read into a given buffer, the transport has `readInto` too (a
 * `FrameSource` in framing's terms): the holder of `readable`'s reader may read the next bytes
 * straight into a buffer of its own between its reads, e.g. the rest of a large frame into
 * that frame, which spares the copy out of the channel's read buffer.
 *
 * `readable` and `writable` are created when first used: a caller that reads and writes with
 * `readChunk`, `readInto`, `writeChunk` and `closeWrite` (a channel's engine does) never makes
 * the process load Deno's Web Streams, which a worker would otherwise pay before its first
 * reply (`bench/ab_engine.ts` case `spawn`).
 */
export class ByteChannelTransport implements Transport {
  /**
   * Reads the next bytes into `view` instead of through `readable`, whose reader the caller
   * holds if it reads `readable` too, with no read pending. Resolves with the bytes read (a view of the start of
   * `view`, or of the buffer it was transferred to) or `null` once `readable` has ended;
   * rejects as a read of `readable` would, and with a TypeError while a read of `readable` is
   * pending or a chunk it read waits in its queue. Present only over a channel that can do it.
   */
  readonly readInto: ((view: Uint8Array) => Promise<Uint8Array | null>) | undefined;
  /**
   * Reads the next chunk without `readable`, which the caller then leaves alone: resolves with
   * it, or `null` once the bytes have ended; rejects as a read of `readable` would, and with a
   * TypeError while another read is pending. Present over a channel that has `readInto`, whose
   * `readable` reads nothing ahead either.
   */
  readonly readChunk: (() => Promise<Uint8Array | null>) | undefined;
  readonly #channel: ByteChannel;
  #readable: ReadableStream<Uint8Array> | undefined;
  #writable: WritableStream<Uint8Array> | undefined;
  /** The readable's controller, once `readable` was created. */
  #readController: ReadableStreamDefaultController<Uint8Array> | undefined;
  /** The channel read in flight, awaited on release so no op outlives the transport. */
  #reading: Promise<unknown> | undefined;
  /** The read function of the `readChunk` in flight, which reads again after an empty chunk. */
  #rereadEmpty: (() => Promise<Uint8Array | null>) | undefined;
  /** A pull came while a direct read was pending: the readable still owes a read. */
  #pullWanted = false;
  /**
   * Settles one microtask after the readable was created, once it has started and passed any
   * read already requested to `pull`; `undefined` from then on.
   */
  #starting: Promise<void> | undefined;
  /** The readable has ended, errored or been cancelled. */
  #readDone = false;
  /** What the readable errored with, for direct reads to throw too. */
  #readError: unknown;
  /** The writable was closed by its owner, or a write failed. */
  #writeDone = false;
  #writing = false;
  /** Chunks that entered the writable's queue and have not reached the sink yet. */
  #queued = 0;
  /** After `close()`: how many queued chunks may still be written. -1 before `close()`. */
  #flushBudget = -1;
  #flushWaiters: Array<() => void> = [];
  #aborted: { reason: unknown } | undefined;
  #released = false;
  #closing: Promise<void> | undefined;
  #releasing: Promise<void> | undefined;

  constructor(channel: ByteChannel) {
    this.#channel = channel;
    const direct = channel.readInto !== undefined;
    this.readInto = direct ? (view) => this.#readDirect(() => channel.readInto!(view)) : undefined;
    this.readChunk = direct ? () => this.#readChunk() : undefined;
  }

  /** Bytes from the peer, created at first use. */
  get readable(): ReadableStream<Uint8Array> {
    return this.#readable ??= this.#createReadable();
  }

  /** Bytes to the peer, created at first use. */
  get writable(): WritableStream<Uint8Array> {
    return this.#writable ??= this.#createWritable();
  }

  /**
   * Writes all of `chunk` without `writable`, which the caller then leaves alone. Resolves
   * once written, or returns `undefined` when it was written synchronously; rejects with
   * TransportClosedError once the transport is closed or the write failed. Call it again
   * only once the previous write settled.
   */
  writeChunk(chunk: Uint8Array): Promise<void> | undefined {
    this.#queued++;
    try {
      return this.#write(chunk);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Half-closes without `writable`: the peer's reads end once they have every byte. */
  closeWrite(): Promise<void> {
    return this.#closeWrite();
  }

  close(): Promise<void> {
    return this.#closing ??= this.#close();
  }

  abort(reason?: unknown): Promise<void> {
    if (!this.#released) {
      this.#aborted = { reason };
      this.#failRead(undefined);
    }
    return this.#release(true);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #createReadable(): ReadableStream<Uint8Array> {
    const direct = this.readInto !== undefined;
    const readable = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#readController = controller;
        // Direct reads may have ended the bytes before the stream existed.
        if (this.#readError !== undefined) controller.error(this.#readError);
        else if (this.#readDone) controller.close();
      },
      pull: this.#pull,
      cancel: () => {
        this.#readDone = true;
        this.#releaseIfDone();
      },
      // With `readInto`, no read ahead: a chunk read ahead into the channel's buffer would
      // have to be delivered before the bytes `readInto` reads.
    }, { highWaterMark: direct ? 0 : 1 });
    // The stream's own start reaction was queued above, so this runs right after it.
    if (direct) this.#starting = Promise.resolve().then(() => this.#starting = undefined);
    return readable;
  }

  #createWritable(): WritableStream<Uint8Array> {
    return new WritableStream<Uint8Array>({
      write: (chunk) => this.#write(chunk),
      close: () => this.#closeWrite(),
      abort: (reason) => this.abort(reason),
    }, {
      highWaterMark: WRITE_HIGH_WATER_MARK,
      size: (chunk) => {
        this.#queued++;
        return chunk instanceof Uint8Array ? chunk.byteLength : 0;
      },
    });
  }

  async #close(): Promise<void> {
    this.#flushBudget = Math.max(0, this.#queued);
    if (!this.#flushSettled()) {
      await new Promise<void>((resolve) => this.#flushWaiters.push(resolve));
    }
    await this.#release(false);
  }

  // `pull` starts the channel read and returns at once, so the stream never counts a pull as
  // running: a read() it is asked for reaches `pull` synchronously (the stream would hold it
  // back until a running pull settled), and `#reading` tells `readInto` of every read the
  // readable owes. A pull while a read is in flight changes nothing: enqueueing its chunk
  // asks for the next pull if the readable still owes one.
  readonly #pull = (): Promise<void> => {
    if (this.#reading !== undefined) this.#pullWanted = true;
    else if (!this.#readDone) this.#readNext();
    return RESOLVED;
  };

  #readNext(): void {
    if (this.#released) return this.#endRead();
    (this.#reading = this.#channel.read()).then(this.#onRead, this.#onReadFailed);
  }

  readonly #onRead = (chunk: Uint8Array | null): void => {
    this.#reading = undefined;
    this.#pullWanted = false;
    // close() or cancel() ended the readable while the read was in flight.
    if (this.#readDone) return;
    if (chunk === null) {
      this.#endRead();
      this.#releaseIfDone();
    } else if (chunk.length > 0) this.#readController!.enqueue(chunk);
    else this.#readNext();
  };

  readonly #onReadFailed = (error: unknown): void => {
    this.#reading = undefined;
    this.#pullWanted = false;
    this.#failRead(error);
  };

  /** Made once, not per read: a small call reads once per side. */
  readonly #readFromChannel = (): Promise<Uint8Array | null> => this.#channel.read();

  #readChunk(): Promise<Uint8Array | null> {
    return this.#readDirect(this.#readFromChannel, true);
  }

  /**
   * A read of `readInto` or `readChunk`: `read` reads the channel. With `skipEmpty` (a
   * `readChunk`), an empty chunk is not returned: the channel is read again. A then with
   * handlers made once, not an async function: one layer and its allocations less on every
   * read (a small call reads once per side).
   */
  #readDirect(
    read: () => Promise<Uint8Array | null>,
    skipEmpty = false,
  ): Promise<Uint8Array | null> {
    // Only in the first microtask of the readable's life: a read() requested before it
    // started reaches `pull` then.
    if (this.#starting !== undefined) {
      return this.#starting.then(() => this.#readDirect(read, skipEmpty));
    }
    // A chunk in the queue (read for a reader released since) comes before any byte read now.
    if (this.#reading !== undefined || (this.#readController?.desiredSize ?? 0) < 0) {
      return Promise.reject(
        new TypeError(`A direct read of ${this.#channel.label} while a read is pending`),
      );
    }
    if (this.#released) this.#endRead();
    if (this.#readDone) return this.#readEndedLater();
    let reading: Promise<Uint8Array | null>;
    try {
      reading = read();
    } catch (error) {
      this.#directFailed(error);
      return this.#readEndedLater();
    }
    this.#reading = reading;
    this.#rereadEmpty = skipEmpty ? read : undefined;
    return reading.then(this.#directRead, this.#directReadFailed);
  }

  readonly #directRead = (
    chunk: Uint8Array | null,
  ): Uint8Array | null | Promise<Uint8Array | null> => {
    this.#reading = undefined;
    if (this.#readDone) return this.#readEnded();
    if (chunk === null) {
      this.#endRead();
      this.#releaseIfDone();
    } else if (this.#pullWanted) {
      // The caller read the readable while this was pending: serve that read now.
      this.#pullWanted = false;
      this.#readNext();
    }
    // Rare: the read loop wants bytes, so read again (as a fresh read, rechecking the state).
    const reread = this.#rereadEmpty;
    if (reread !== undefined && chunk?.length === 0) return this.#readDirect(reread, true);
    return chunk;
  };

  readonly #directReadFailed = (error: unknown): null => {
    this.#directFailed(error);
    return this.#readEnded();
  };

  #directFailed(error: unknown): void {
    this.#reading = undefined;
    this.#pullWanted = false;
    this.#failRead(error);
  }

  /** `#readEnded()` as a promise: its error rejects it. */
  #readEndedLater(): Promise<null> {
    try {
      return Promise.resolve(this.#readEnded());
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** What `readInto` gives once the readable is done: its error, or the end. */
  #readEnded(): null {
    if (this.#readError !== undefined) throw this.#readError;
    return null;
  }

  #endRead(): void {
    if (this.#readDone) return;
    this.#readDone = true;
    this.#readController?.close();
  }

  /** Errors the readable, unless the failure is only the echo of our own graceful release. */
  #failRead(error: unknown): void {
    if (this.#readDone) return;
    if (this.#released && !this.#aborted) return this.#endRead();
    this.#readDone = true;
    this.#readError = this.#aborted ? this.#closedError() : new TransportClosedError(
      `Read from ${this.#channel.label} failed: ${messageOf(error)}`,
      { cause: error },
    );
    this.#readController?.error(this.#readError);
  }

  #write(chunk: Uint8Array): Promise<void> | undefined {
    this.#queued--;
    if (this.#flushBudget === 0) throw this.#closedError();
    if (this.#flushBudget > 0) this.#flushBudget--;
    if (this.#released) throw this.#closedError();
    if (!(chunk instanceof Uint8Array)) {
      throw new TypeError(`${this.#channel.label} accepts Uint8Array chunks, got ${typeOf(chunk)}`);
    }
    let pending: Promise<void> | undefined;
    try {
      pending = this.#channel.write(chunk);
    } catch (error) {
      throw this.#writeFailed(error);
    }
    if (pending === undefined) {
      if (this.#flushBudget === 0) this.#wakeFlush();
      return undefined;
    }
    this.#writing = true;
    return pending.then(this.#written, this.#notWritten);
  }

  // Made once, not per write: a small call writes once per side.
  readonly #written = (): void => {
    this.#writing = false;
    if (this.#flushBudget === 0) this.#wakeFlush();
  };

  readonly #notWritten = (error: unknown): never => {
    this.#writing = false;
    throw this.#writeFailed(error);
  };

  #writeFailed(error: unknown): TransportClosedError {
    this.#writeDone = true;
    this.#wakeFlush();
    if (this.#aborted || this.#released) return this.#closedError();
    if (error instanceof TransportClosedError) return error;
    return new TransportClosedError(
      `Write to ${this.#channel.label} failed: ${messageOf(error)}`,
      { cause: error },
    );
  }

  /** The owner closed `writable`: half-close, keep reading. */
  async #closeWrite(): Promise<void> {
    if (!this.#released) {
      try {
        await this.#channel.closeWrite();
      } catch {
        // The peer is gone already: there is no direction left to end.
      }
    }
    this.#writeDone = true;
    this.#wakeFlush();
    this.#releaseIfDone();
  }

  #closedError(): TransportClosedError {
    const label = this.#channel.label;
    if (this.#aborted) {
      return new TransportClosedError(`${label} was aborted`, { cause: this.#aborted.reason });
    }
    return new TransportClosedError(`${label} is closed`);
  }

  #flushSettled(): boolean {
    return this.#writeDone || this.#released || (this.#flushBudget === 0 && !this.#writing);
  }

  #wakeFlush(): void {
    if (this.#flushWaiters.length === 0 || !this.#flushSettled()) return;
    for (const wake of this.#flushWaiters.splice(0)) wake();
  }

  /** Both directions finished on their own: nothing can happen on the channel any more. */
  #releaseIfDone(): void {
    if (this.#readDone && this.#writeDone) void this.#release(false);
  }

  #release(abortive: boolean): Promise<void> {
    if (this.#releasing) return this.#releasing;
    this.#released = true;
    this.#wakeFlush();
    if (!abortive) this.#endRead();
    return this.#releasing = this.#doRelease(abortive);
  }

  async #doRelease(abortive: boolean): Promise<void> {
    try {
      await this.#channel.close(abortive);
    } catch {
      // Releasing is best effort: the OS object may be gone with its peer already.
    }
    await this.#reading?.catch(() => {});
    this.#channel.freeBuffers?.();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  return value.constructor?.name ?? "object";
}

/**
 * The first read buffer: room for a handshake's control frames (at most 1 KiB each), so a
 * connection refused in its handshake, or one that only ever exchanges small messages, never
 * holds more; reads that fill it double it (MAX_READ_BUFFER_BYTES).
 */
const MIN_READ_BUFFER_BYTES = 2 * 1024;
/** Reads stop growing here: 256 KiB beat 64 KiB and 1 MiB on one-way throughput. */
const MAX_READ_BUFFER_BYTES = 256 * 1024;

/** A read at least this large may be handed out as a view of a buffer read on into. */
const SHARED_MIN_READ_BYTES = 16 * 1024;
/** ... when at least this much of the buffer is left after it. */
const SHARED_MIN_REST_BYTES = 64 * 1024;

/** Bytes of read buffer allocated in this thread, for tests (see readBufferBytes). */
let allocatedBytes = 0;
/** Bytes of read buffer that ReadBuffers hold now: allocated, neither handed out nor freed. */
let heldBytes = 0;

/**
 * What this thread's {@linkcode ReadBuffer}s allocated so far and hold now, in bytes: for
 * tests that a refused connection allocates little and a closed one keeps nothing.
 */
export function readBufferBytes(): { allocated: number; held: number } {
  return { allocated: allocatedBytes, held: heldBytes };
}

/**
 * The read buffer of a channel, and the rule that turns bytes read into a chunk that can be
 * handed out and kept: a read that filled at least half the buffer hands the buffer itself
 * out (no copy) and a new one is allocated, twice as large when the read filled it; a
 * smaller read is copied out at its exact size and the buffer is reused. Either way no chunk
 * is ever overwritten, and a 64-byte message does not pin a 256 KiB buffer.
 *
 * Over a channel whose reads fill `buffer` in place (never transferring its ArrayBuffer, which
 * would detach the views handed out before), a large read that leaves much of a large buffer
 * unused (16 KiB or more, with 64 KiB or more left) is handed out as a view, and the next
 * reads go into the rest of the same buffer:
 * 64 KiB frames read into a 256 KiB buffer were each copied out (`slice()`, a large share of
 * the CPU of a 64 KiB echo: `bench/ab_engine.ts` case `raw64k`) where now four share one
 * allocation. Such a view pins at
 * most 16 times its size.
 *
 * The buffer is allocated at the first read, small, and grows only with reads that fill it;
 * {@linkcode free} gives its memory back at once when the channel is released, rather than at
 * the garbage collection that finds it unreachable, which under connection churn may come
 * only after tens of megabytes of such buffers have piled up.
 */
export class ReadBuffer {
  /** Where the next read goes: a fresh buffer, or the unused rest of the last one. */
  #buffer: Uint8Array | undefined;
  /** The size of `buffer`, kept apart because a BYOB read detaches it (length 0). */
  #size = 0;
  /** The size of the next buffer allocated, from which reads grow. */
  #capacity = MIN_READ_BUFFER_BYTES;
  /** Part of `buffer`'s ArrayBuffer was handed out: it is no longer this buffer's alone. */
  #shared = false;
  readonly #maxSize: number;
  readonly #inPlace: boolean;

  /**
   * @param maxSize The largest buffer reads grow to, in bytes.
   * @param readsInPlace Reads fill `buffer` itself (a `Deno.Conn` or `Deno.FsFile` read, not
   * a BYOB stream read): large reads may then share one buffer.
   */
  constructor(maxSize: number = MAX_READ_BUFFER_BYTES, readsInPlace = false) {
    this.#maxSize = maxSize;
    this.#inPlace = readsInPlace;
  }

  /** Where the next read goes, allocated now if need be. */
  get buffer(): Uint8Array {
    return this.#buffer ?? this.#allocate();
  }

  /**
   * Returns the bytes just read as a chunk the caller owns.
   *
   * @param view The bytes read: the start of `buffer`, or of the ArrayBuffer a BYOB read
   * transferred `buffer` to.
   */
  take(view: Uint8Array): Uint8Array {
    const size = this.#size;
    const n = view.length;
    if (this.#inPlace && n >= SHARED_MIN_READ_BYTES && size - n >= SHARED_MIN_REST_BYTES) {
      heldBytes -= n;
      this.#buffer = new Uint8Array(view.buffer, view.byteOffset + n, size - n);
      this.#size = size - n;
      this.#shared = true;
      return view;
    }
    if (n >= size >>> 1) {
      // Handed out whole: the next read allocates the next buffer.
      heldBytes -= size;
      if (n === this.#capacity && this.#capacity < this.#maxSize) this.#capacity *= 2;
      this.#buffer = undefined;
      this.#size = 0;
      return view;
    }
    const chunk = view.slice();
    if (view.buffer !== this.#buffer?.buffer) {
      this.#buffer = new Uint8Array(view.buffer, view.byteOffset, size);
    }
    return chunk;
  }

  /**
   * Frees the buffer's memory now, unless part of it was handed out. Call it only once no
   * read into `buffer` is pending and none will be made.
   */
  free(): void {
    const buffer = this.#buffer;
    this.#buffer = undefined;
    heldBytes -= this.#size;
    this.#size = 0;
    // A detached buffer (a BYOB read moved it) has nothing left to free.
    if (buffer === undefined || this.#shared || buffer.buffer.byteLength === 0) return;
    // Detaching frees the memory at once, not at the next full garbage collection.
    (buffer.buffer as ArrayBuffer).transfer(0);
  }

  /** Takes back the buffer a BYOB read transferred and returned at the end of the stream. */
  restore(view: Uint8Array): void {
    this.#buffer = new Uint8Array(view.buffer);
  }

  #allocate(): Uint8Array {
    const size = this.#capacity;
    allocatedBytes += size;
    heldBytes += size;
    this.#size = size;
    this.#shared = false;
    return this.#buffer = new Uint8Array(size);
  }
}
