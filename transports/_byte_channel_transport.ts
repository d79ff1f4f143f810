// The one implementation of the Transport contract. Each transport (memory, Unix socket, TCP,
// TLS, stdio on either side) only supplies a ByteChannel: how to read, write, half-close and
// release its OS object. Close semantics, flushing and error mapping live here and in the
// read direction (ChannelReads, below), once. Below them, the plumbing of the stdio byte
// channels on both sides: resizing a pipe's buffer, and where a worker keeps its real stdout.

import { TransportClosedError } from "../errors.ts";
import type { Transport } from "./types.ts";
import { onDeno } from "../_runtime.ts";

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
  /** See {@linkcode Transport.readIntoMoves}: `readInto` moves whole received buffers. */
  readonly readIntoMoves?: boolean;
  /**
   * Writes all of `chunk`. Returns `undefined` when the bytes were written synchronously,
   * which spares a promise per chunk. Called again only after the previous call settled.
   */
  write(chunk: Uint8Array): Promise<void> | undefined;
  /**
   * The bytes the system has taken so far, each part of a chunk counted as it goes (a large
   * chunk to a slow reader is written in many parts). Optional: absent where a chunk is taken
   * whole or not at all.
   */
  readonly bytesSent?: number;
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
 *
 * The transport's own life (open, then released gracefully or by an abort) is a
 * {@linkcode TransportLife}; each direction keeps its own state ({@linkcode ChannelReads},
 * {@linkcode ChannelWrites}), and the transport releases the channel once both have ended.
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
  readonly #life: TransportLife;
  readonly #reads: ChannelReads;
  readonly #writes: ChannelWrites;
  #readable: ReadableStream<Uint8Array> | undefined;
  #writable: WritableStream<Uint8Array> | undefined;
  #closing: Promise<void> | undefined;
  #releasing: Promise<void> | undefined;

  constructor(channel: ByteChannel) {
    this.#channel = channel;
    const life = new TransportLife(channel.label, () => this.#releaseIfDone());
    const reads = new ChannelReads(channel, life);
    this.#life = life;
    this.#reads = reads;
    this.#writes = new ChannelWrites(channel, life);
    const direct = channel.readInto !== undefined;
    this.readInto = direct ? (view) => reads.readDirect(view) : undefined;
    this.readChunk = direct ? () => reads.readDirect(undefined) : undefined;
  }

  /** See {@linkcode Transport.readIntoMoves}. */
  get readIntoMoves(): boolean | undefined {
    return this.#channel.readIntoMoves;
  }

  /** Bytes from the peer, created at first use. */
  /** See {@linkcode Transport.bytesSent}. */
  get bytesSent(): number | undefined {
    return this.#channel.bytesSent;
  }

  get readable(): ReadableStream<Uint8Array> {
    return this.#readable ??= this.#reads.createReadable();
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
    return this.#writes.writeChunk(chunk);
  }

  /** Half-closes without `writable`: the peer's reads end once they have every byte. */
  closeWrite(): Promise<void> {
    return this.#writes.closeWrite();
  }

  close(): Promise<void> {
    return this.#closing ??= this.#close();
  }

  abort(reason?: unknown): Promise<void> {
    if (!this.#life.released) {
      this.#life.abort(reason);
      this.#reads.fail(undefined);
    }
    return this.#release(true);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #createWritable(): WritableStream<Uint8Array> {
    const writes = this.#writes;
    return new WritableStream<Uint8Array>({
      write: (chunk) => writes.write(chunk),
      close: () => writes.closeWrite(),
      abort: (reason) => this.abort(reason),
    }, {
      highWaterMark: WRITE_HIGH_WATER_MARK,
      size: (chunk) => {
        writes.queued();
        return chunk instanceof Uint8Array ? chunk.byteLength : 0;
      },
    });
  }

  async #close(): Promise<void> {
    // Released in this very call when nothing is left to flush: an abort() right after
    // close() then finds the transport closed.
    const flushing = this.#writes.flush();
    if (flushing !== undefined) await flushing;
    await this.#release(false);
  }

  /** Both directions finished on their own: nothing can happen on the channel any more. */
  #releaseIfDone(): void {
    if (this.#reads.done && this.#writes.done) void this.#release(false);
  }

  #release(abortive: boolean): Promise<void> {
    if (this.#releasing) return this.#releasing;
    this.#life.release();
    this.#writes.wakeFlush();
    if (!abortive) this.#reads.end();
    return this.#releasing = this.#doRelease(abortive);
  }

  async #doRelease(abortive: boolean): Promise<void> {
    try {
      await this.#channel.close(abortive);
    } catch {
      // Releasing is best effort: the OS object may be gone with its peer already.
    }
    await this.#reads.reading?.catch(() => {});
    this.#channel.freeBuffers?.();
  }
}

/** A transport's life: OPEN, then RELEASED by close() or both directions' ends, or ABORTED. */
type LifeState = typeof OPEN | typeof RELEASED | typeof ABORTED;
const OPEN = 0;
const RELEASED = 1;
const ABORTED = 2;

/**
 * The lifecycle of a ByteChannelTransport, shared by its two directions: whether it was
 * released or aborted, the error of an operation after that, and what a direction that ended
 * on its own tells the transport.
 */
class TransportLife {
  #state: LifeState = OPEN;
  #reason: unknown;
  readonly #label: string;
  readonly #onEnded: () => void;

  constructor(label: string, onEnded: () => void) {
    this.#label = label;
    this.#onEnded = onEnded;
  }

  get released(): boolean {
    return this.#state !== OPEN;
  }

  get aborted(): boolean {
    return this.#state === ABORTED;
  }

  /** abort(): from OPEN only. */
  abort(reason: unknown): void {
    this.#state = ABORTED;
    this.#reason = reason;
  }

  /** The transport releases its channel; an abort stays ABORTED. */
  release(): void {
    if (this.#state === OPEN) this.#state = RELEASED;
  }

  closedError(): TransportClosedError {
    if (this.#state === ABORTED) {
      return new TransportClosedError(`${this.#label} was aborted`, { cause: this.#reason });
    }
    return new TransportClosedError(`${this.#label} is closed`);
  }

  ended(): void {
    this.#onEnded();
  }
}

/**
 * The write direction of a ByteChannelTransport: one channel write at a time, and the count
 * of chunks accepted before `close()` that it still lets through.
 */
class ChannelWrites {
  readonly #channel: ByteChannel;
  readonly #life: TransportLife;
  /** The writable was closed by its owner, or a write failed. */
  #done = false;
  #writing = false;
  /** Chunks that entered the writable's queue and have not reached the sink yet. */
  #queued = 0;
  /** After `close()`: how many queued chunks may still be written. -1 before `close()`. */
  #flushBudget = -1;
  #flushWaiters: Array<() => void> = [];

  constructor(channel: ByteChannel, life: TransportLife) {
    this.#channel = channel;
    this.#life = life;
  }

  /** The writes are over: the writable was closed, or a write failed. */
  get done(): boolean {
    return this.#done;
  }

  /** A chunk entered the writable's queue. */
  queued(): void {
    this.#queued++;
  }

  writeChunk(chunk: Uint8Array): Promise<void> | undefined {
    this.#queued++;
    try {
      return this.write(chunk);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Writes a chunk counted by `queued()` or `writeChunk()`. */
  write(chunk: Uint8Array): Promise<void> | undefined {
    this.#queued--;
    if (this.#flushBudget === 0) throw this.#life.closedError();
    if (this.#flushBudget > 0) this.#flushBudget--;
    if (this.#life.released) throw this.#life.closedError();
    if (!(chunk instanceof Uint8Array)) {
      throw new TypeError(`${this.#channel.label} accepts Uint8Array chunks, got ${typeOf(chunk)}`);
    }
    let pending: Promise<void> | undefined;
    try {
      pending = this.#channel.write(chunk);
    } catch (error) {
      throw this.#failed(error);
    }
    if (pending === undefined) {
      if (this.#flushBudget === 0) this.wakeFlush();
      return undefined;
    }
    this.#writing = true;
    return pending.then(this.#written, this.#notWritten);
  }

  /** The owner closed `writable`: half-close, keep reading. */
  async closeWrite(): Promise<void> {
    if (!this.#life.released) {
      try {
        await this.#channel.closeWrite();
      } catch {
        // The peer is gone already: there is no direction left to end.
      }
    }
    this.#done = true;
    this.wakeFlush();
    this.#life.ended();
  }

  /**
   * close(): lets the chunks queued so far through and refuses later ones. Resolves once they
   * are written; `undefined` when they are already.
   */
  flush(): Promise<void> | undefined {
    this.#flushBudget = Math.max(0, this.#queued);
    if (this.#flushSettled()) return undefined;
    return new Promise<void>((resolve) => this.#flushWaiters.push(resolve));
  }

  wakeFlush(): void {
    if (this.#flushWaiters.length === 0 || !this.#flushSettled()) return;
    for (const wake of this.#flushWaiters.splice(0)) wake();
  }

  // Made once, not per write: a small call writes once per side.
  readonly #written = (): void => {
    this.#writing = false;
    if (this.#flushBudget === 0) this.wakeFlush();
  };

  readonly #notWritten = (error: unknown): never => {
    this.#writing = false;
    throw this.#failed(error);
  };

  #failed(error: unknown): TransportClosedError {
    this.#done = true;
    this.wakeFlush();
    if (this.#life.released) return this.#life.closedError();
    if (error instanceof TransportClosedError) return error;
    return new TransportClosedError(
      `Write to ${this.#channel.label} failed: ${messageOf(error)}`,
      { cause: error },
    );
  }

  #flushSettled(): boolean {
    return this.#done || this.#life.released || (this.#flushBudget === 0 && !this.#writing);
  }
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

// The read direction of a ByteChannelTransport: its `readable`, created at first use, and the
// direct reads (`readInto`, `readChunk`) that bypass it, over one channel read at a time.

/** What the reads need of a `ByteChannel`: its read half. */
export interface ReadChannel {
  readonly label: string;
  read(): Promise<Uint8Array | null>;
  readInto?(view: Uint8Array): Promise<Uint8Array | null>;
}

/** What the reads need of their transport's lifecycle. */
export interface ReadsOwner {
  /** The transport was released, gracefully or by an abort. */
  readonly released: boolean;
  /** The transport was aborted. */
  readonly aborted: boolean;
  /** The error of an operation on the released transport. */
  closedError(): TransportClosedError;
  /** A direction ended on its own: the transport is released once both did. */
  ended(): void;
}

/** What `pull` returns: the read it starts is followed by `#reading`, not by the stream. */
const RESOLVED: Promise<void> = Promise.resolve();

/** The read direction's life: READING until the bytes end (ENDED) or fail (FAILED). */
type ReadState = typeof READING | typeof ENDED | typeof FAILED;
const READING = 0;
/** The bytes ended, or the readable was cancelled or released. */
const ENDED = 1;
const FAILED = 2;

/**
 * The reads of a ByteChannelTransport. The channel is read by one read at a time, either for
 * the readable (its `pull`) or for a direct read (`readDirect`); which one is in flight is
 * `#reading`, and a pull that comes while a direct read is pending is served after it.
 */
export class ChannelReads {
  readonly #channel: ReadChannel;
  readonly #owner: ReadsOwner;
  /** The readable's controller, once the readable was created. */
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  /**
   * Settles one microtask after the readable was created, once it has started and passed any
   * read already requested to `pull`; `undefined` from then on.
   */
  #starting: Promise<void> | undefined;
  /** A pull came while a direct read was pending: the readable still owes a read. */
  #pullWanted = false;
  /** The channel read in flight, awaited on release so no op outlives the transport. */
  #reading: Promise<unknown> | undefined;
  /** The direct read in flight is a `readChunk`, which reads again after an empty chunk. */
  #skipEmpty = false;
  #state: ReadState = READING;
  /** What the reads failed with, once FAILED, for direct reads to throw too. */
  #error: unknown;

  constructor(channel: ReadChannel, owner: ReadsOwner) {
    this.#channel = channel;
    this.#owner = owner;
  }

  /** The reads are over: the bytes ended or failed, or the readable was cancelled. */
  get done(): boolean {
    return this.#state !== READING;
  }

  /** The channel read in flight, if any. */
  get reading(): Promise<unknown> | undefined {
    return this.#reading;
  }

  /** The transport's `readable`: called once, at its first use. */
  createReadable(): ReadableStream<Uint8Array> {
    const direct = this.#channel.readInto !== undefined;
    const readable = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
        // Direct reads may have ended the bytes before the stream existed.
        if (this.#state === FAILED) controller.error(this.#error);
        else if (this.#state === ENDED) controller.close();
      },
      pull: this.#pull,
      cancel: () => {
        if (this.#state === READING) this.#state = ENDED;
        this.#owner.ended();
      },
      // With `readInto`, no read ahead: a chunk read ahead into the channel's buffer would
      // have to be delivered before the bytes `readInto` reads.
    }, { highWaterMark: direct ? 0 : 1 });
    // The stream's own start reaction was queued above, so this runs right after it.
    if (direct) this.#starting = Promise.resolve().then(() => this.#starting = undefined);
    return readable;
  }

  /**
   * A read of `readInto` (into `view`) or `readChunk` (no `view`): with `readChunk`, an empty
   * chunk is not returned: the channel is read again. A then with handlers made once, not an
   * async function: one layer and its allocations less on every read (a small call reads
   * once per side).
   */
  readDirect(view: Uint8Array | undefined): Promise<Uint8Array | null> {
    // Only in the first microtask of the readable's life: a read() requested before it
    // started reaches `pull` then.
    if (this.#starting !== undefined) return this.#starting.then(() => this.readDirect(view));
    // A chunk in the queue (read for a reader released since) comes before any byte read now.
    if (this.#reading !== undefined || (this.#controller?.desiredSize ?? 0) < 0) {
      return Promise.reject(
        new TypeError(`A direct read of ${this.#channel.label} while a read is pending`),
      );
    }
    if (this.#owner.released) this.end();
    if (this.#state !== READING) return this.#endedLater();
    let reading: Promise<Uint8Array | null>;
    try {
      reading = view === undefined ? this.#channel.read() : this.#channel.readInto!(view);
    } catch (error) {
      this.#onReadFailed(error);
      return this.#endedLater();
    }
    this.#reading = reading;
    this.#skipEmpty = view === undefined;
    return reading.then(this.#directRead, this.#directReadFailed);
  }

  /** Ends the reads: the readable closes. */
  end(): void {
    if (this.#state !== READING) return;
    this.#state = ENDED;
    this.#controller?.close();
  }

  /** Errors the reads, unless the failure is only the echo of a graceful release. */
  fail(error: unknown): void {
    if (this.#state !== READING) return;
    const owner = this.#owner;
    if (owner.released && !owner.aborted) return this.end();
    this.#state = FAILED;
    this.#error = owner.aborted ? owner.closedError() : new TransportClosedError(
      `Read from ${this.#channel.label} failed: ${messageOf(error)}`,
      { cause: error },
    );
    this.#controller?.error(this.#error);
  }

  // `pull` starts the channel read and returns at once, so the stream never counts a pull as
  // running: a read() it is asked for reaches `pull` synchronously (the stream would hold it
  // back until a running pull settled), and `#reading` tells `readDirect` of every read the
  // readable owes. A pull while a read is in flight changes nothing: enqueueing its chunk
  // asks for the next pull if the readable still owes one.
  readonly #pull = (): Promise<void> => {
    if (this.#reading !== undefined) this.#pullWanted = true;
    else if (this.#state === READING) this.#readNext();
    return RESOLVED;
  };

  #readNext(): void {
    if (this.#owner.released) return this.end();
    (this.#reading = this.#channel.read()).then(this.#onRead, this.#onReadFailed);
  }

  readonly #onRead = (chunk: Uint8Array | null): void => {
    this.#reading = undefined;
    this.#pullWanted = false;
    // close() or cancel() ended the readable while the read was in flight.
    if (this.#state !== READING) return;
    if (chunk === null) {
      this.end();
      this.#owner.ended();
    } else if (chunk.length > 0) this.#controller!.enqueue(chunk);
    else this.#readNext();
  };

  readonly #onReadFailed = (error: unknown): void => {
    this.#reading = undefined;
    this.#pullWanted = false;
    this.fail(error);
  };

  readonly #directRead = (
    chunk: Uint8Array | null,
  ): Uint8Array | null | Promise<Uint8Array | null> => {
    this.#reading = undefined;
    if (this.#state !== READING) return this.#ended();
    if (chunk === null) {
      this.end();
      this.#owner.ended();
    } else if (this.#pullWanted) {
      // The caller read the readable while this was pending: serve that read now.
      this.#pullWanted = false;
      this.#readNext();
    }
    // Rare: the read loop wants bytes, so read again (as a fresh read, rechecking the state).
    if (this.#skipEmpty && chunk?.length === 0) return this.readDirect(undefined);
    return chunk;
  };

  readonly #directReadFailed = (error: unknown): null => {
    this.#onReadFailed(error);
    return this.#ended();
  };

  /** `#ended()` as a promise: its error rejects it. */
  #endedLater(): Promise<null> {
    try {
      return Promise.resolve(this.#ended());
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** What a direct read gives once the reads are done: their error, or the end. */
  #ended(): null {
    if (this.#state === FAILED) throw this.#error;
    return null;
  }
}

/** The message of `error`, whatever was thrown. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// Resizing a pipe's kernel buffer (Linux `fcntl(F_SETPIPE_SZ)`), which Deno has no API for,
// through libc by FFI. Only done where FFI is already granted: we never prompt, and without
// the permission (or off Linux) pipes keep the OS default of 64 KiB.
//
// Why it matters: the frame writer sends 64 KiB batches, so a 64 KiB pipe holds exactly one
// and the two processes move it in lock step (write, wait for the reader to empty the pipe,
// write again), with two or three thread wake-ups per batch on each side; a larger buffer
// lets the writer run ahead of the reader as a socket's buffers do.

const F_SETPIPE_SZ = 1031;
const F_GETPIPE_SZ = 1032;
// Linux values on x86-64 and arm64 (asm-generic).
const O_RDONLY = 0;
const O_NONBLOCK = 0o4000;
const O_CLOEXEC = 0o2000000;

const SYMBOLS = {
  open: { parameters: ["buffer", "i32"], result: "i32" },
  fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" },
  close: { parameters: ["i32"], result: "i32" },
} as const;

/** An open file descriptor of ours, or a path to open (e.g. `/proc/<pid>/fd/0`). */
export type PipeRef = number | string;

/**
 * Bytes that cross a pipe before it is resized: 256 KiB, four default pipes full. A
 * transport that moves less keeps the default, so short-lived and idle ones cost no FFI call
 * at spawn and none of the user's pipe budget (`/proc/sys/fs/pipe-user-pages-soft`).
 */
export const RESIZE_AFTER_BYTES = 256 * 1024;

/** Resizes one pipe, once, after {@linkcode RESIZE_AFTER_BYTES} have crossed it. */
export class PipeResizer {
  readonly #pipe: PipeRef;
  readonly #bytes: number;
  #left: number;

  /**
   * @param pipe The pipe.
   * @param bytes The buffer size to ask for; 0 never resizes.
   */
  constructor(pipe: PipeRef, bytes: number) {
    this.#pipe = pipe;
    this.#bytes = bytes;
    this.#left = bytes > 0 ? RESIZE_AFTER_BYTES : 0;
  }

  /** Counts `bytes` more across the pipe. */
  count(bytes: number): void {
    if (this.#left > 0 && (this.#left -= bytes) <= 0) resizePipes([this.#pipe], this.#bytes);
  }

  /** Never resizes from now on (the pipe's path may name another process's pipe soon). */
  cancel(): void {
    this.#left = 0;
  }
}

/**
 * Asks the kernel for pipe buffers of `bytes` for each pipe in `pipes`, and returns their
 * sizes afterwards, or `undefined` when it cannot ask (no FFI permission, not Linux, no
 * glibc). A refused request (over `/proc/sys/fs/pipe-max-size`, over the user's pipe
 * budget) or a target that is not a pipe leaves that pipe as it was and reads as -1 or its
 * old size. Never throws.
 */
export function resizePipes(pipes: readonly PipeRef[], bytes: number): number[] | undefined {
  return withLibc((libc) =>
    pipes.map((pipe) =>
      onPipe(libc, pipe, (fd) => {
        if (bytes > 0) libc.fcntl(fd, F_SETPIPE_SZ, bytes);
        return libc.fcntl(fd, F_GETPIPE_SZ, 0);
      })
    )
  );
}

type Libc = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

function withLibc<T>(use: (libc: Libc) => T): T | undefined {
  if (!onDeno() || Deno.build.os !== "linux") return undefined;
  try {
    if (Deno.permissions.querySync({ name: "ffi" }).state !== "granted") return undefined;
    // Closed again at once: an open library is a resource that test sanitizers count.
    const library = Deno.dlopen("libc.so.6", SYMBOLS);
    try {
      return use(library.symbols);
    } finally {
      library.close();
    }
  } catch {
    return undefined;
  }
}

function onPipe(libc: Libc, pipe: PipeRef, use: (fd: number) => number): number {
  if (typeof pipe === "number") return use(pipe);
  // Read-only and non-blocking: opening a pipe this way never waits for a writer, and a
  // reader more or less changes nothing for the processes using it.
  const fd = libc.open(
    new TextEncoder().encode(`${pipe}\0`),
    O_RDONLY | O_NONBLOCK | O_CLOEXEC,
  );
  if (fd < 0) return -1;
  try {
    return use(fd);
  } finally {
    libc.close(fd);
  }
}

// Where this process's real stdout is kept when something moved `Deno.stdout` away from it:
// a conduit worker runs a preload first (`quietPreloadUrl` in `workers/spawn_worker.ts`),
// which points `Deno.stdout` at stderr (so no stray write lands between two frames) and keeps
// the real one here for the stdio transport. A registered symbol, because the preload is a data: URL that cannot import
// this module.

/** The `Symbol.for` key of the global under which the real `Deno.stdout` is kept. */
export const REAL_STDOUT_KEY = "conduit.stdout";

/** The global under which the real `Deno.stdout` is kept. */
export const REAL_STDOUT: unique symbol = Symbol.for(REAL_STDOUT_KEY) as never;

/** This process's real stdout: the one kept by the worker preload, or `Deno.stdout`. */
export function realStdout(): typeof Deno.stdout {
  return (globalThis as { [REAL_STDOUT]?: typeof Deno.stdout })[REAL_STDOUT] ?? Deno.stdout;
}
