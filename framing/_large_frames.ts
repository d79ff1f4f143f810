// FrameDecoder's large-frame policy: when a frame of 64 KiB or more is read into a buffer of
// its own rather than handed out as a view of a chunk, when it is split into head and rest,
// the memory of such buffers handed back through recycle() for later frames to reuse, and
// the buffer a frame that spans chunks is assembled in, grown as its bytes arrive.

import { FRAME_HEADER_BYTES } from "./_packer.ts";

/**
 * The most buffers a {@linkcode FrameDecoder} keeps for reuse from
 * {@linkcode FrameDecoder.recycle}: 4. Recycling more drops the oldest, so the pool holds the
 * sizes of the latest frames.
 *
 * @example
 * ```ts
 * import { MAX_RECYCLED_BUFFERS } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * assert.equal(MAX_RECYCLED_BUFFERS, 4);
 * ```
 */
export const MAX_RECYCLED_BUFFERS = 4;

/**
 * The least a frame must still need for readTarget() to offer it: below this, one ordinary
 * read that also brings the frames after it beats a read into the frame alone. Also the
 * least a frame's buffer must hold for recycle() to take it back.
 */
export const DIRECT_READ_MIN_BYTES = 64 * 1024;

/**
 * With `splitHead`, how many bytes after a large frame's header readTarget() offers for the
 * next frame's header and head (a protocol's envelope: conduit's is at most about 1 KiB).
 */
const SPLIT_PROBE_BYTES = 2 * 1024;

/**
 * A frame that spans chunks and is larger than twice this starts in a buffer of this size,
 * grown eightfold as its bytes arrive: a header alone, which costs its sender 4 bytes, makes the
 * receiver allocate no more than this.
 */
const FIRST_BUFFER_BYTES = 2 * 1024 * 1024;

/** A frame that spans chunks (or its rest, after a split head), assembled in a buffer. */
export class PartialFrame {
  /** Bytes of the frame in `bytes` so far. */
  fill = 0;
  /** Bytes were read straight into `bytes`, at FrameDecoder.readTarget(). */
  direct = false;
  /** Bytes copied into `bytes`: from chunks, and when it grew. */
  copied = 0;
  /** The length of `bytes`, kept apart: a BYOB read into it detaches it for a while. */
  capacity: number;
  /** The frame's length. */
  readonly size: number;
  /** The head of a split frame, returned before this rest. */
  readonly head: Uint8Array | undefined;
  /** The buffer the frame is assembled in, as long as the frame or shorter. */
  bytes: Uint8Array;

  /**
   * @param size The frame's length.
   * @param from The head of a split frame, returned before this rest; a buffer of `size`
   * bytes to use, else one is allocated.
   */
  constructor(size: number, from: { head?: Uint8Array; bytes?: Uint8Array } = {}) {
    this.size = size;
    this.head = from.head;
    this.bytes = from.bytes ??
      new Uint8Array(size > 2 * FIRST_BUFFER_BYTES ? FIRST_BUFFER_BYTES : size);
    this.capacity = this.bytes.length;
  }

  /**
   * The unfilled rest of the buffer, which grows first when it is full; `whole` asks for the
   * frame's whole buffer while none of it has come (for a reader that moves it there).
   */
  room(whole = false): Uint8Array {
    if ((this.fill === this.capacity || (whole && this.fill === 0)) && this.capacity < this.size) {
      const grown = new Uint8Array(whole ? this.size : Math.min(this.size, this.capacity * 8));
      grown.set(this.bytes.subarray(0, this.fill));
      this.copied += this.fill;
      this.bytes = grown;
      this.capacity = grown.length;
    }
    return this.bytes.subarray(this.fill);
  }

  /** Copies what `chunk` holds of the frame, from `offset`; returns the offset after it. */
  take(chunk: Uint8Array, offset: number): number {
    while (this.fill < this.size && offset < chunk.length) {
      const room = this.room();
      const take = Math.min(room.length, chunk.length - offset);
      room.set(chunk.subarray(offset, offset + take));
      this.fill += take;
      this.copied += take;
      offset += take;
    }
    return offset;
  }
}

/**
 * What a FrameDecoder knows and decides about large frames. The decoder tells it what each
 * frame was (`viewed`, `small`, `assembled`); it answers whether the rest of a frame is read
 * straight into the frame's buffer (`readsDirect`), where a frame is split (`splitAt`), and
 * starts the frames that span chunks, in buffers of their own (`start`).
 */
export class LargeFrames {
  /**
   * The last large frame was read straight into its buffer, or every large frame is read
   * apart (`recycling`, `runs`) and the last frame was one: read the next header alone. Reset
   * by the decoder when it is given a chunk other than the one it asked for.
   */
  expectLarge = false;
  readonly #splitHead: ((start: Uint8Array) => number | undefined) | undefined;
  /**
   * Large frames have been handed back through recycle(): each large frame is read into a
   * buffer of its own (one more read per frame), never as a view of a chunk.
   */
  #recycling = false;
  /**
   * Large frames come back to back: a chunk held one and more bytes after it. Each large
   * frame is then read into a buffer of its own too, until a small frame ends the run.
   */
  #runs = false;
  /**
   * The buffers of the large frames returned whole and not yet recycled: only memory that
   * backs nothing but one whole frame may be reused.
   */
  readonly #frameBuffers = new WeakSet<ArrayBufferLike>();
  /** Recycled buffers, oldest first, at most MAX_RECYCLED_BUFFERS. */
  readonly #recycled: ArrayBuffer[] = [];
  /** Buffers allocated for frames that spanned chunks. */
  #allocated = 0;

  constructor(splitHead: ((start: Uint8Array) => number | undefined) | undefined) {
    this.#splitHead = splitHead;
  }

  /** Buffers allocated so far for frames that spanned chunks. */
  get buffersAllocated(): number {
    return this.#allocated;
  }

  /**
   * A frame of `length` bytes was returned as a view of its chunk, `more` bytes following it
   * there. Large frames back to back, or handed back, would rather come in buffers of their
   * own: the next one will.
   */
  viewed(length: number, more: boolean): void {
    if (length < DIRECT_READ_MIN_BYTES) return this.small();
    if (more) this.#runs = true;
    if (this.#apart()) this.expectLarge = true;
  }

  /** A small frame: it ends a run of large ones. */
  small(): void {
    this.#runs = false;
    this.expectLarge = false;
  }

  /**
   * A frame assembled in a buffer of its own, `size` bytes, is complete: `direct` when bytes
   * were read straight into it.
   */
  assembled(frame: Uint8Array, size: number, direct: boolean): void {
    this.expectLarge = direct;
    // Registered only now: a read into the frame may have transferred its buffer.
    if (size >= DIRECT_READ_MIN_BYTES) this.#frameBuffers.add(frame.buffer);
    else this.#runs = false; // a small frame ends a run of large ones
  }

  /**
   * Whether the rest of a frame of `frameBytes`, `pending` bytes, is read straight into its
   * own buffer: when a read of it alone is large enough to beat an ordinary read that also
   * brings the frames after it, or when large frames come back to back or are handed back,
   * so that each comes in a buffer of its own.
   */
  readsDirect(frameBytes: number, pending: number): boolean {
    return pending >= DIRECT_READ_MIN_BYTES ||
      (this.#apart() && frameBytes >= DIRECT_READ_MIN_BYTES);
  }

  /**
   * After a large frame, with `splitHead`: a buffer for the next header and the head after
   * it, read as an ordinary chunk so that the head is there to split at. `undefined` without
   * `splitHead`.
   */
  probe(): Uint8Array | undefined {
    return this.#splitHead === undefined
      ? undefined
      : new Uint8Array(FRAME_HEADER_BYTES + SPLIT_PROBE_BYTES);
  }

  /**
   * Where to split a frame of `length` bytes that begins with `start` (and spans chunks): the
   * head's length, or 0 to keep it whole. Only a frame whose rest will be read straight into
   * its buffer is split: otherwise one buffer costs less than two.
   */
  splitAt(length: number, start: Uint8Array): number {
    if (this.#splitHead === undefined || !this.readsDirect(length, length - start.length)) {
      return 0;
    }
    const head = this.#splitHead(start);
    return head !== undefined && Number.isInteger(head) && head > 0 && head <= start.length
      ? head
      : 0;
  }

  /**
   * A frame of `length` bytes that spans chunks starts, after `head` if split: its buffer is
   * a recycled one if one fits.
   */
  start(length: number, head: Uint8Array | undefined): PartialFrame {
    const recycled = this.#recycled;
    for (let i = recycled.length - 1; i >= 0; i--) {
      if (recycled[i].byteLength === length) {
        return new PartialFrame(length, { head, bytes: new Uint8Array(recycled.splice(i, 1)[0]) });
      }
    }
    this.#allocated++;
    return new PartialFrame(length, { head });
  }

  /** FrameDecoder.recycle(): takes back the memory of a large frame's own buffer, once. */
  recycle(bytes: Uint8Array): boolean {
    // Large frames are handed back: from now on each gets a buffer of its own, even one that
    // would fit in a read with others (where it would be a view of a read buffer, which
    // cannot be handed back), so that its memory can serve again.
    if (bytes.length >= DIRECT_READ_MIN_BYTES) this.#recycling = true;
    const buffer = bytes.buffer;
    // A detached buffer was moved away (a thread transport may transfer a frame sent on).
    if (!this.#frameBuffers.delete(buffer) || buffer.byteLength === 0) return false;
    const recycled = this.#recycled;
    if (recycled.length === MAX_RECYCLED_BUFFERS) recycled.shift();
    // A transfer moves the memory without copying it and leaves every view of the frame
    // empty, so a stale view can neither read a later frame nor recycle the memory again.
    recycled.push((buffer as ArrayBuffer).transfer());
    return true;
  }

  /** Whether every large frame is read into a buffer of its own (recycling, or a run). */
  #apart(): boolean {
    return this.#recycling || this.#runs;
  }
}
