// The read direction of a ByteChannelTransport: its `readable`, created at first use, and the
// direct reads (`readInto`, `readChunk`) that bypass it, over one channel read at a time.

import { TransportClosedError } from "../errors.ts";

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
