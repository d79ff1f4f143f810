// A ByteChannel over two single-producer single-consumer rings in SharedArrayBuffers, one per
// direction (_ring.ts). Each write is a record in the ring published with one atomic store; a
// read takes every record published so far in one chunk. A read with nothing to read waits
// as _ring_read_wait.ts says (asleep, or spinning after this side's write). A chunk larger
// than half the ring travels on a MessagePort instead (_ring_oversized.ts).
//
// This end's lifecycle is one state, its transitions in TRANSITIONS:
//
//   OPEN ──fail()──▶ FAILED
//     └──────┴──close()──▶ CLOSED, or ABORTED (close(true))
//
// What the channel failed with stays in `#failure` once it is closed. The ends' half-closes
// (END, the peer's CLOSE) are flags in the rings' shared headers, where the peer sees them.

import { TransportClosedError } from "../errors.ts";
import type { ByteChannel } from "./_byte_channel_transport.ts";
import { fillOrSwap } from "../transfer.ts";
import {
  OVERSIZED_UNREAD,
  READ_POS,
  READ_SEQ,
  READER_CLOSED,
  READER_SLEEPS,
  READER_STATE,
  Ring,
  WRITE_POS,
  WRITE_SEQ,
  WRITER_ABORTED,
  WRITER_ENDED,
  WRITER_GONE,
  WRITER_SLEEPS,
  WRITER_STATE,
} from "./_ring.ts";
import { OversizedPort } from "./_ring_oversized.ts";
import { RingReadWait } from "./_ring_read_wait.ts";

export { HEADER_BYTES } from "./_ring.ts";

/** The most bytes one read gathers. */
const MAX_READ_BYTES = 256 * 1024;

const OPEN = 0;
/** `fail()`: the other thread died. */
const FAILED = 1;
/** `close()`: released; reads end. */
const CLOSED = 2;
/** `close(true)`: released; reads fail. */
const ABORTED = 3;

const TRANSITIONS: readonly (readonly number[])[] = [
  /* OPEN */ [FAILED, CLOSED, ABORTED],
  /* FAILED */ [CLOSED, ABORTED],
  /* CLOSED */ [],
  /* ABORTED */ [],
];

export interface SharedRingChannelOptions {
  label: string;
  incoming: SharedArrayBuffer;
  outgoing: SharedArrayBuffer;
  port: MessagePort;
  spinMicros: number;
  onRelease?: () => void;
}

export class SharedRingChannel implements ByteChannel {
  readonly readIntoMoves = true;
  readonly label: string;
  readonly #in: Ring;
  readonly #out: Ring;
  readonly #oversized: OversizedPort;
  readonly #readWait: RingReadWait;
  readonly #onRelease: (() => void) | undefined;
  #state = OPEN;
  #failure: TransportClosedError | undefined;
  /** The unread rest of a chunk `readInto` took part of. */
  #rest: Uint8Array | undefined;
  /** Wakes the waits of writers in flight when the channel fails or is released. */
  readonly #waking = new Set<() => void>();

  constructor(options: SharedRingChannelOptions) {
    this.label = options.label;
    this.#in = new Ring(options.incoming);
    this.#out = new Ring(options.outgoing);
    this.#oversized = new OversizedPort(options.port, (what) => void this.#corrupt(what));
    this.#readWait = new RingReadWait(
      this.#in.header,
      options.spinMicros,
      () => this.#state === OPEN,
    );
    this.#onRelease = options.onRelease;
  }

  /** Tells the peer this worker is closing itself: its reads and writes fail at once. */
  announceGone(): void {
    if (this.#state !== OPEN) return;
    Atomics.or(this.#out.header, WRITER_STATE, WRITER_GONE);
    this.#out.signal(WRITE_SEQ, READER_SLEEPS);
    Atomics.or(this.#in.header, READER_STATE, READER_CLOSED);
    this.#in.signal(READ_SEQ, WRITER_SLEEPS);
  }

  /** The other thread died: every pending op fails with `error`. */
  fail(error: TransportClosedError): void {
    if (!this.#enter(FAILED)) return;
    this.#failure = error;
    this.#wake();
  }

  async read(): Promise<Uint8Array | null> {
    const rest = this.#rest;
    if (rest !== undefined) {
      this.#rest = undefined;
      return rest;
    }
    const header = this.#in.header;
    for (;;) {
      if (this.#state !== OPEN) return this.#readWhenNotOpen();
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
      await this.#readWait.wait(seq);
    }
  }

  /** What a read gets once this end failed or was released. */
  #readWhenNotOpen(): null {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#state === ABORTED) throw new TransportClosedError(`${this.label} was aborted`);
    return null;
  }

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
    if (this.#state === OPEN) {
      Atomics.or(this.#out.header, WRITER_STATE, WRITER_ENDED);
      this.#out.signal(WRITE_SEQ, READER_SLEEPS);
    }
    return Promise.resolve();
  }

  close(abortive: boolean): Promise<void> {
    if (!this.#enter(abortive ? ABORTED : CLOSED)) return Promise.resolve();
    Atomics.or(this.#out.header, WRITER_STATE, abortive ? WRITER_ABORTED : WRITER_ENDED);
    this.#out.signal(WRITE_SEQ, READER_SLEEPS);
    Atomics.or(this.#in.header, READER_STATE, READER_CLOSED);
    this.#in.signal(READ_SEQ, WRITER_SLEEPS);
    this.#oversized.close();
    this.#wake();
    this.#onRelease?.();
    return Promise.resolve();
  }

  /** Moves to `next`; false (and nothing changes) when TRANSITIONS has no such move. */
  #enter(next: number): boolean {
    if (!TRANSITIONS[this.#state].includes(next)) return false;
    this.#state = next;
    return true;
  }

  /**
   * Takes the records from `read` to `written`: inline ones gathered into one chunk. The peer
   * shares this memory and may write anything into it, so every record is checked against
   * what was published (within the ring, in whole records, no larger than a writer puts in
   * the ring) before its bytes are read, and lengths read again are held to the first count:
   * a peer that breaks the ring fails the channel, it cannot hold this thread or hand out
   * bytes it never published.
   */
  async #take(read: number, written: number): Promise<Uint8Array> {
    const ring = this.#in;
    const words = ring.words;
    const published = (written - read) | 0;
    if (published < 0 || published > ring.capacity || ((read | written) & 3) !== 0) {
      throw this.#corrupt(`${published} bytes published from position ${read}`);
    }
    const first = words[(read & ring.mask) >>> 2];
    if (first < 0) {
      const chunk = await this.#oversizedChunk();
      Atomics.sub(this.#in.header, OVERSIZED_UNREAD, 1);
      this.#consumed(read + 4);
      return chunk;
    }
    // First pass: how many records, and bytes, one chunk takes.
    const largest = ring.capacity >>> 1;
    let end = read;
    let total = 0;
    let records = 0;
    while (end !== written) {
      const length = words[(end & ring.mask) >>> 2];
      if (length < 0) break;
      const size = 4 + ((length + 3) & ~3);
      if (length === 0 || length > largest || size > ((written - end) | 0)) {
        throw this.#corrupt(`a record of ${length} bytes, ${(written - end) | 0} published`);
      }
      if (total > 0 && total + length > MAX_READ_BYTES) break;
      total += length;
      records++;
      end = (end + size) | 0;
    }
    const chunk = new Uint8Array(total);
    let at = 0;
    for (let pos = read; records > 0; records--) {
      const length = words[(pos & ring.mask) >>> 2];
      if (!(length >= 0 && length <= total - at)) {
        throw this.#corrupt(`a record of ${length} bytes changed after it was published`);
      }
      ring.copyOut(pos + 4, length, chunk, at);
      at += length;
      pos = (pos + 4 + ((length + 3) & ~3)) | 0;
    }
    this.#consumed(end);
    return chunk;
  }

  /** The peer broke the ring's layout: the channel fails, and this is what reads throw. */
  #corrupt(what: string): TransportClosedError {
    const error = new TransportClosedError(`${this.label}: the peer corrupted the ring (${what})`);
    this.fail(error);
    return this.#failure ?? error;
  }

  #consumed(pos: number): void {
    Atomics.store(this.#in.header, READ_POS, pos);
    this.#in.signal(READ_SEQ, WRITER_SLEEPS);
  }

  async #oversizedChunk(): Promise<Uint8Array> {
    for (;;) {
      const chunk = this.#oversized.shift();
      if (chunk !== undefined) return chunk;
      if (this.#failure !== undefined) throw this.#failure;
      if (this.#state !== OPEN) throw new TransportClosedError(`${this.label} is closed`);
      await this.#oversized.arrival();
    }
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
    this.#readWait.wrote();
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
    Atomics.add(header, OVERSIZED_UNREAD, 1);
    this.#oversized.post(chunk);
    const ring = this.#out;
    const pos = Atomics.load(header, WRITE_POS);
    ring.words[(pos & ring.mask) >>> 2] = -1;
    Atomics.store(header, WRITE_POS, (pos + 4) | 0);
    ring.signal(WRITE_SEQ, READER_SLEEPS);
    this.#readWait.wrote();
  }

  #checkWritable(): void {
    if (this.#state !== OPEN) {
      if (this.#failure !== undefined) throw this.#failure;
      throw new TransportClosedError(`${this.label} is closed`);
    }
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
    this.#readWait.wake();
    this.#oversized.wake();
    Atomics.notify(this.#out.header, READ_SEQ);
    for (const wake of this.#waking) wake();
    this.#waking.clear();
  }
}
