// Small writes of the Web Worker transport, gathered into one message: a burst of frames
// costs the peer one wake-up, not one per frame.

/** Writes below this join the coalescing buffer; larger ones travel as they are. */
export const COALESCE_MAX_BYTES = 4 * 1024;
const COALESCE_BUFFER_BYTES = 64 * 1024;
/**
 * Microtask hops a coalesced batch waits for more writes, and again while they keep coming:
 * a WritableStream hands its sink the next chunk a few hops after the last one settled. A
 * lone write waits for these hops only, never for a task.
 */
const COALESCE_HOPS = 4;

/** The bytes staged for the next message, and the microtask hops that decide when it goes. */
export class WriteCoalescer {
  #staging: Uint8Array | undefined;
  #staged = 0;
  #scheduled = false;
  #hops = 0;
  #stagedSinceHop = false;
  readonly #flush: () => void;

  /** @param flush Called when the staged bytes should go: it takes them with `take()`. */
  constructor(flush: () => void) {
    this.#flush = flush;
  }

  /** Stages `chunk` (shorter than COALESCE_MAX_BYTES), flushing first if it does not fit. */
  stage(chunk: Uint8Array): void {
    const length = chunk.length;
    if (this.#staged + length > COALESCE_BUFFER_BYTES) this.#flush();
    const staging = this.#staging ??= new Uint8Array(COALESCE_BUFFER_BYTES);
    staging.set(chunk, this.#staged);
    this.#staged += length;
    this.#stagedSinceHop = true;
    if (!this.#scheduled) {
      this.#scheduled = true;
      this.#hops = 0;
      queueMicrotask(this.#hop);
    }
  }

  /** The staged bytes as a chunk of their own, if any; nothing is staged afterwards. */
  take(): Uint8Array | undefined {
    const staged = this.#staged;
    if (staged === 0) return undefined;
    this.#staged = 0;
    return this.#staging!.slice(0, staged);
  }

  /** Forgets the staged bytes: they will not be sent. */
  drop(): void {
    this.#staged = 0;
  }

  readonly #hop = (): void => {
    if (this.#staged === 0) {
      this.#scheduled = false;
      return;
    }
    if (this.#stagedSinceHop) {
      this.#stagedSinceHop = false;
      this.#hops = 0;
    }
    if (++this.#hops < COALESCE_HOPS) {
      queueMicrotask(this.#hop);
      return;
    }
    this.#scheduled = false;
    this.#flush();
  };
}
