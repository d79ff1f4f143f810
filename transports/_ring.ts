// One direction of the shared ring transport: a header of atomics, then a single-producer
// single-consumer ring of records (a 4-byte length, then the bytes, padded to 4).

/** Int32 slots of a ring's header; the data follows at HEADER_BYTES. */
export const WRITE_POS = 0;
export const READ_POS = 1;
/** Bumped by the writer on every publish and state change: what a sleeping reader waits on. */
export const WRITE_SEQ = 2;
/** Bumped by the reader on every consume and state change: what a blocked writer waits on. */
export const READ_SEQ = 3;
export const READER_SLEEPS = 4;
export const WRITER_SLEEPS = 5;
/** The writer's state: WRITER_ENDED, WRITER_ABORTED, WRITER_GONE. */
export const WRITER_STATE = 6;
/** The reader's state: READER_CLOSED once it reads no more. */
export const READER_STATE = 7;
/** Oversized chunks posted by the writer and not yet taken by the reader: 0 or 1. */
export const OVERSIZED_UNREAD = 8;
export const HEADER_BYTES = 64;

export const WRITER_ENDED = 1;
export const WRITER_ABORTED = 2;
/** The writer's worker closed itself. */
export const WRITER_GONE = 4;
export const READER_CLOSED = 1;

/** One direction's memory: a header of atomics, then the ring. */
export class Ring {
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
