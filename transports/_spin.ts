// The spin of the thread transports: a side that expects the other thread's answer soon spins
// for it a short while instead of sleeping, since waking a thread that went to sleep costs far
// more than the wait (bench/threads_layers.ts). One policy for the shared ring and the Web
// Worker transport: spin for at most `spinMicros`, and back off while spins mostly miss.

/**
 * Below this share of recent spins that saw an answer (a moving average, each spin weighing
 * 1/8), a side mostly sleeps at once. A few misses in a row are common even when answers come
 * quickly (a GC pause, the peer preempted once), and backing off after them cost most spins:
 * backing off after 4 misses in a row made the ring's small-call p50 70 µs, this 15 µs
 * (bench/threads_ratios.ts).
 */
const HIT_RATE_TO_SPIN = 0.2;
/** While backed off, one wait in this many spins again, to learn when answers come quickly. */
const PROBE_EVERY = 32;

export class Spinner {
  readonly #ms: number;
  /** The moving share of spins that saw an answer. */
  #hits = 1;
  #sleepsSinceProbe = 0;

  /** @param spinMicros The longest spin; 0 never spins. */
  constructor(spinMicros: number) {
    this.#ms = spinMicros / 1000;
  }

  /** Whether this side spins at all. */
  get enabled(): boolean {
    return this.#ms > 0;
  }

  /**
   * Whether to spin this time: not while spins mostly miss (a one-way stream, or a peer that is
   * not scheduled, whose CPU the spin would take), but for one call in PROBE_EVERY.
   */
  shouldSpin(): boolean {
    if (this.#hits < HIT_RATE_TO_SPIN && ++this.#sleepsSinceProbe < PROBE_EVERY) return false;
    this.#sleepsSinceProbe = 0;
    return true;
  }

  /**
   * Spins until `answered()` holds or the spin time is up, and learns from which came first.
   *
   * @returns Whether the answer came while spinning.
   */
  spinUntil(answered: () => boolean): boolean {
    const until = performance.now() + this.#ms;
    while (!answered()) {
      if (performance.now() > until) {
        this.#hits -= this.#hits / 8;
        return false;
      }
    }
    this.#hits += (1 - this.#hits) / 8;
    return true;
  }
}
