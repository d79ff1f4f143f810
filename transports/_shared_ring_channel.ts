// A ByteChannel over two single-producer single-consumer rings in SharedArrayBuffers, one per
// direction. Each write is a record in the ring (a 4-byte length, then the bytes, padded to 4)
// published with one atomic store; a read takes every record published so far in one chunk.
// A reader with nothing to read sleeps in Atomics.waitAsync, and a writer wakes it with
// Atomics.notify only when it sleeps. A wake-up that way is a task on the reader's event loop
// and costs about as much as a postMessage, so once this side has written (a call, or a reply
// after which the next call is likely), it spins on the ring for a while in the microtask
// after its write, with the flag that asks for a notify lowered: an answer within the spin is
// seen in well under a microsecond and costs the writer no notify. The spin waits for that
// write on purpose: a read is asked for as soon as the last chunk is handled, before this side
// writes its next call, and a spin there would hold that call back for the whole spin. A chunk larger than half the ring travels as a message on a
// MessagePort instead, its record (length negated) keeping its place in the byte order.

import { TransportClosedError } from "../errors.ts";
import type { ByteChannel } from "./_byte_channel_transport.ts";
import { fillOrSwap, outgoing } from "../_transfer_marks.ts";
import { Spinner } from "./_spin.ts";

/** Int32 slots of a ring's header; the data follows at HEADER_BYTES. */
const WRITE_POS = 0;
const READ_POS = 1;
/** Bumped by the writer on every publish and state change: what a sleeping reader waits on. */
const WRITE_SEQ = 2;
/** Bumped by the reader on every consume and state change: what a blocked writer waits on. */
const READ_SEQ = 3;
const READER_SLEEPS = 4;
const WRITER_SLEEPS = 5;
/** The writer's state: WRITER_ENDED, WRITER_ABORTED. */
const WRITER_STATE = 6;
/** The reader's state: READER_CLOSED once it reads no more. */
const READER_STATE = 7;
/** Oversized chunks posted by the writer and not yet taken by the reader: 0 or 1. */
const OVERSIZED_UNREAD = 8;
export const HEADER_BYTES = 64;

const WRITER_ENDED = 1;
const WRITER_ABORTED = 2;
/** The writer's worker closed itself. */
const WRITER_GONE = 4;
const READER_CLOSED = 1;

/** The most bytes one read gathers. */
const MAX_READ_BYTES = 256 * 1024;

/** One direction's memory: a header of atomics, then the ring. */
class Ring {
  readonly header: Int32Array;
  readonly words: Int32Array;
  readonly bytes: Uint8Array;
  readonly capacity: number;
  readonly mask: number;

  constructor(buffer: SharedArrayBuffer) {
    this.header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    this.capacity = buffer.byteLength - HEADER_BYTES;
    this.mask = this.capacity - 1;
    this.bytes = new Uint8Array(buffer, HEADER_BYTES, this.capacity);
    this.words = new Int32Array(buffer, HEADER_BYTES, this.capacity / 4);
  }

  /** Bumps `seq` and wakes the other side if it sleeps on it. */
  signal(seq: number, sleeps: number): void {
    Atomics.add(this.header, seq, 1);
    if (Atomics.load(this.header, sleeps) !== 0) Atomics.notify(this.header, seq);
  }

  /** Copies `length` bytes from the ring at `pos` into `into` at `at`, wrapping around. */
  copyOut(pos: number, length: number, into: Uint8Array, at: number): void {
    const offset = pos & this.mask;
    const first = Math.min(length, this.capacity - offset);
    into.set(this.bytes.subarray(offset, offset + first), at);
    if (first < length) into.set(this.bytes.subarray(0, length - first), at + first);
  }

  /** Copies `chunk` into the ring at `pos`, wrapping around. */
  copyIn(pos: number, chunk: Uint8Array): void {
    const offset = pos & this.mask;
    const first = Math.min(chunk.length, this.capacity - offset);
    this.bytes.set(first === chunk.length ? chunk : chunk.subarray(0, first), offset);
    if (first < chunk.length) this.bytes.set(chunk.subarray(first), 0);
  }
}

export interface SharedRingChannelOptions {
  label: string;
  incoming: SharedArrayBuffer;
  outgoing: SharedArrayBuffer;
  port: MessagePort;
  spinMicros: number;
  onRelease?: () => void;
}

export class SharedRingChannel implements ByteChannel {
  readonly label: string;
  readonly #in: Ring;
  readonly #out: Ring;
  readonly #port: MessagePort;
  readonly #spinner: Spinner;
  readonly #onRelease: (() => void) | undefined;
  /** Chunks too large for the ring, in the order their records come. */
  readonly #oversized: Uint8Array[] = [];
  #oversizedWaiter: (() => void) | undefined;
  /** The unread rest of a chunk `readInto` took part of. */
  #rest: Uint8Array | undefined;
  #failure: TransportClosedError | undefined;
  #released = false;
  #abortive = false;
  /** Wakes the waits in flight (a read's, a write's) when the channel fails or is released. */
  readonly #waking = new Set<() => void>();
  /** The incoming WRITE_SEQ a spin began at. */
  #spinSeen = 0;
  /** Wakes the read waiting for the peer's next write, if any. */
  #readWaiter: (() => void) | undefined;
  /** The incoming WRITE_SEQ the waiting read saw last. */
  #readSeq = 0;
  /**
   * The one waitAsync on the incoming WRITE_SEQ in flight, if any: a read whose wait a spin
   * ended leaves it in flight, and the next read to sleep waits on it instead of adding one.
   */
  #sleeper: Promise<void> | undefined;
  /** This side wrote since the last spin: an answer may come soon. */
  #wrote = false;
  #spinQueued = false;

  constructor(options: SharedRingChannelOptions) {
    this.label = options.label;
    this.#in = new Ring(options.incoming);
    this.#out = new Ring(options.outgoing);
    this.#port = options.port;
    this.#spinner = new Spinner(options.spinMicros);
    this.#onRelease = options.onRelease;
    this.#port.onmessage = (event: MessageEvent) => {
      if (!(event.data instanceof Uint8Array)) return;
      this.#oversized.push(event.data);
      const wake = this.#oversizedWaiter;
      this.#oversizedWaiter = undefined;
      wake?.();
    };
  }

  /** Tells the peer this worker is closing itself: its reads and writes fail at once. */
  announceGone(): void {
    if (this.#released || this.#failure !== undefined) return;
    Atomics.or(this.#out.header, WRITER_STATE, WRITER_GONE);
    this.#out.signal(WRITE_SEQ, READER_SLEEPS);
    Atomics.or(this.#in.header, READER_STATE, READER_CLOSED);
    this.#in.signal(READ_SEQ, WRITER_SLEEPS);
  }

  /** The other thread died: every pending op fails with `error`. */
  fail(error: TransportClosedError): void {
    if (this.#failure !== undefined || this.#released) return;
    this.#failure = error;
    this.#wake();
  }

  async read(): Promise<Uint8Array | null> {
    const rest = this.#rest;
    if (rest !== undefined) {
      this.#rest = undefined;
      return rest;
    }
    const ring = this.#in;
    const header = ring.header;
    for (;;) {
      if (this.#failure !== undefined) throw this.#failure;
      if (this.#released) {
        if (this.#abortive) throw new TransportClosedError(`${this.label} was aborted`);
        return null;
      }
      const seq = Atomics.load(header, WRITE_SEQ);
      const state = Atomics.load(header, WRITER_STATE);
      if (state & WRITER_ABORTED) throw new TransportClosedError(`${this.label}: the peer aborted`);
      const read = Atomics.load(header, READ_POS);
      const written = Atomics.load(header, WRITE_POS);
      if (read !== written) return await this.#take(read, written);
      if (state & WRITER_GONE) {
        throw new TransportClosedError(`${this.label}: the worker closed itself`);
      }
      if (state & WRITER_ENDED) return null;
      await this.#waitForWrite(seq);
    }
  }

  /**
   * Waits until the peer bumps the incoming WRITE_SEQ from `seen` (or this side fails or is
   * released): asleep in waitAsync, unless a spin after this side's write sees it first.
   */
  #waitForWrite(seen: number): Promise<void> {
    const header = this.#in.header;
    Atomics.store(header, READER_SLEEPS, 1);
    if (Atomics.load(header, WRITE_SEQ) !== seen || !this.#ensureSleeper(seen)) {
      Atomics.store(header, READER_SLEEPS, 0);
      return Promise.resolve();
    }
    this.#readSeq = seen;
    const waiting = new Promise<void>((resolve) => {
      this.#readWaiter = resolve;
      this.#waking.add(resolve);
    });
    if (this.#wrote) this.#queueSpin();
    return waiting;
  }

  /** Makes sure a waitAsync on the incoming WRITE_SEQ is in flight; false if it moved from `seen`. */
  #ensureSleeper(seen: number): boolean {
    if (this.#sleeper !== undefined) return true;
    const { async, value } = Atomics.waitAsync(this.#in.header, WRITE_SEQ, seen);
    if (!async) return false;
    this.#sleeper = value.then(this.#onNotified);
    return true;
  }

  readonly #onNotified = (): void => {
    this.#sleeper = undefined;
    Atomics.store(this.#in.header, READER_SLEEPS, 0);
    this.#wakeReader();
  };

  #wakeReader(): void {
    const wake = this.#readWaiter;
    if (wake === undefined) return;
    this.#readWaiter = undefined;
    this.#waking.delete(wake);
    wake();
  }

  #queueSpin(): void {
    if (this.#spinQueued || !this.#spinner.enabled) return;
    this.#spinQueued = true;
    queueMicrotask(this.#spin);
  }

  /**
   * Spins on the incoming ring while a read waits, with READER_SLEEPS lowered so the peer's
   * next write costs it no notify, as `Spinner` allows (it backs off while spins miss: on a
   * busy machine the peer may not even be scheduled, and spinning only takes its CPU).
   */
  readonly #spin = (): void => {
    this.#spinQueued = false;
    this.#wrote = false;
    if (
      this.#readWaiter === undefined || this.#released || this.#failure !== undefined ||
      !this.#spinner.shouldSpin()
    ) return;
    const header = this.#in.header;
    const seen = this.#spinSeen = this.#readSeq;
    Atomics.store(header, READER_SLEEPS, 0);
    if (this.#spinner.spinUntil(this.#peerWrote)) {
      this.#wakeReader();
      return;
    }
    // Back to sleep: a write from now on sees the flag and notifies the waitAsync in flight.
    Atomics.store(header, READER_SLEEPS, 1);
    if (Atomics.load(header, WRITE_SEQ) !== seen || !this.#ensureSleeper(seen)) {
      Atomics.store(header, READER_SLEEPS, 0);
      this.#wakeReader();
    }
  };

  /** Whether the peer wrote since the spin began (the WRITE_SEQ it saw moved). */
  readonly #peerWrote = (): boolean => Atomics.load(this.#in.header, WRITE_SEQ) !== this.#spinSeen;

  /** Reads into `view`: an oversized message that is exactly `view`'s buffer is swapped in. */
  async readInto(view: Uint8Array): Promise<Uint8Array | null> {
    const chunk = await this.read();
    if (chunk === null) return null;
    const { read, rest } = fillOrSwap(view, chunk);
    this.#rest = rest;
    return read;
  }

  write(chunk: Uint8Array): Promise<void> | undefined {
    this.#checkWritable();
    const length = chunk.length;
    if (length === 0) return undefined;
    const ring = this.#out;
    if (length > ring.capacity >>> 1) return this.#writeOversized(chunk);
    const need = 4 + ((length + 3) & ~3);
    if (this.#free() >= need) {
      this.#publish(chunk, need);
      return undefined;
    }
    return this.#writeWhenFree(chunk, need);
  }

  closeWrite(): Promise<void> {
    if (!this.#released && this.#failure === undefined) {
      Atomics.or(this.#out.header, WRITER_STATE, WRITER_ENDED);
      this.#out.signal(WRITE_SEQ, READER_SLEEPS);
    }
    return Promise.resolve();
  }

  close(abortive: boolean): Promise<void> {
    if (this.#released) return Promise.resolve();
    this.#released = true;
    this.#abortive = abortive;
    Atomics.or(this.#out.header, WRITER_STATE, abortive ? WRITER_ABORTED : WRITER_ENDED);
    this.#out.signal(WRITE_SEQ, READER_SLEEPS);
    Atomics.or(this.#in.header, READER_STATE, READER_CLOSED);
    this.#in.signal(READ_SEQ, WRITER_SLEEPS);
    this.#port.onmessage = null;
    this.#port.close();
    this.#oversized.length = 0;
    this.#wake();
    this.#onRelease?.();
    return Promise.resolve();
  }

  /** Takes the records from `read` to `written`: inline ones gathered into one chunk. */
  async #take(read: number, written: number): Promise<Uint8Array> {
    const ring = this.#in;
    const words = ring.words;
    const first = words[(read & ring.mask) >>> 2];
    if (first < 0) {
      const chunk = await this.#oversizedChunk();
      Atomics.sub(this.#in.header, OVERSIZED_UNREAD, 1);
      this.#consumed(read + 4);
      return chunk;
    }
    // First pass: how many records, and bytes, one chunk takes.
    let end = read;
    let total = 0;
    while (end !== written) {
      const length = words[(end & ring.mask) >>> 2];
      if (length < 0 || (total > 0 && total + length > MAX_READ_BYTES)) break;
      total += length;
      end = (end + 4 + ((length + 3) & ~3)) | 0;
    }
    const chunk = new Uint8Array(total);
    let at = 0;
    for (let pos = read; pos !== end;) {
      const length = words[(pos & ring.mask) >>> 2];
      ring.copyOut(pos + 4, length, chunk, at);
      at += length;
      pos = (pos + 4 + ((length + 3) & ~3)) | 0;
    }
    this.#consumed(end);
    return chunk;
  }

  #consumed(pos: number): void {
    Atomics.store(this.#in.header, READ_POS, pos);
    this.#in.signal(READ_SEQ, WRITER_SLEEPS);
  }

  async #oversizedChunk(): Promise<Uint8Array> {
    while (this.#oversized.length === 0) {
      if (this.#failure !== undefined) throw this.#failure;
      if (this.#released) throw new TransportClosedError(`${this.label} is closed`);
      let wake!: () => void;
      await new Promise<void>((resolve) => {
        wake = resolve;
        this.#oversizedWaiter = resolve;
        this.#waking.add(resolve);
      });
      this.#waking.delete(wake);
    }
    return this.#oversized.shift()!;
  }

  #free(): number {
    const header = this.#out.header;
    const used = (Atomics.load(header, WRITE_POS) - Atomics.load(header, READ_POS)) >>> 0;
    return this.#out.capacity - used;
  }

  #publish(chunk: Uint8Array, need: number): void {
    const ring = this.#out;
    const pos = Atomics.load(ring.header, WRITE_POS);
    ring.words[(pos & ring.mask) >>> 2] = chunk.length;
    ring.copyIn(pos + 4, chunk);
    Atomics.store(ring.header, WRITE_POS, (pos + need) | 0);
    ring.signal(WRITE_SEQ, READER_SLEEPS);
    this.#wrote = true;
    if (this.#readWaiter !== undefined) this.#queueSpin();
  }

  async #writeWhenFree(chunk: Uint8Array, need: number): Promise<void> {
    const header = this.#out.header;
    for (;;) {
      const seq = Atomics.load(header, READ_SEQ);
      this.#checkWritable();
      if (this.#free() >= need) return this.#publish(chunk, need);
      await this.#sleep(header, READ_SEQ, seq, WRITER_SLEEPS);
    }
  }

  /**
   * Posts a chunk too large for the ring once the reader has taken the last such chunk (so at
   * most one is unread at a time) and the ring has room for its record, then the record: the
   * reader finds the message before or soon after. Waiting for the whole ring to drain instead
   * cost a wake-up of each thread per large frame, whose head is the ring's last record.
   */
  async #writeOversized(chunk: Uint8Array): Promise<void> {
    const header = this.#out.header;
    for (;;) {
      const seq = Atomics.load(header, READ_SEQ);
      this.#checkWritable();
      if (Atomics.load(header, OVERSIZED_UNREAD) === 0 && this.#free() >= 4) break;
      await this.#sleep(header, READ_SEQ, seq, WRITER_SLEEPS);
    }
    const { message, transfer } = outgoing(chunk);
    Atomics.add(header, OVERSIZED_UNREAD, 1);
    this.#port.postMessage(message, transfer);
    const ring = this.#out;
    const pos = Atomics.load(header, WRITE_POS);
    ring.words[(pos & ring.mask) >>> 2] = -1;
    Atomics.store(header, WRITE_POS, (pos + 4) | 0);
    ring.signal(WRITE_SEQ, READER_SLEEPS);
    this.#wrote = true;
    if (this.#readWaiter !== undefined) this.#queueSpin();
  }

  #checkWritable(): void {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#released) throw new TransportClosedError(`${this.label} is closed`);
    const state = Atomics.load(this.#out.header, READER_STATE);
    if (state & READER_CLOSED) throw new TransportClosedError(`${this.label}: the peer closed`);
  }

  /**
   * Waits until `header[seq]` moves from `seen`, asleep in waitAsync with `sleeps` raised so
   * the other side notifies. Returns early when this side fails or closes.
   */
  async #sleep(header: Int32Array, seq: number, seen: number, sleeps: number): Promise<void> {
    Atomics.store(header, sleeps, 1);
    const { async, value } = Atomics.waitAsync(header, seq, seen);
    if (async) {
      let wake!: () => void;
      await new Promise<void>((resolve) => {
        wake = resolve;
        this.#waking.add(resolve);
        value.then(() => resolve());
      });
      this.#waking.delete(wake);
    }
    Atomics.store(header, sleeps, 0);
  }

  /** Ends this side's waits: the promises and the waitAsync calls under them. */
  #wake(): void {
    this.#readWaiter = undefined;
    Atomics.notify(this.#in.header, WRITE_SEQ);
    Atomics.notify(this.#out.header, READ_SEQ);
    for (const wake of this.#waking) wake();
    this.#waking.clear();
  }
}
