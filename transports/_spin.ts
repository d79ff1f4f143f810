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
/**
 * How long a spin that can tell whether the peer took its message waits for that, at most.
 * A sleeping Worker took its message 26-49 µs (p25-p90) after the post on an idle 2-core VM.
 * While another process kept a core busy, a peer that had not taken it within 70 µs mostly
 * took it only once the spin was over (1,048 of 1,745 such calls, 150 µs spins): it was
 * waiting for the CPU the spin held. 70 µs gave up 2.8% of spins on the idle VM.
 */
const TAKEN_WITHIN_MS = 0.07;

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
   * With `taken`, gives up early, as a miss, when the peer has not taken this side's message
   * within TAKEN_WITHIN_MS: it is not running, and may be waiting for this very CPU.
   *
   * @returns Whether the answer came while spinning.
   */
  spinUntil(answered: () => boolean, taken?: () => boolean): boolean {
    const start = performance.now();
    const until = start + this.#ms;
    let takenBy = taken === undefined ? Infinity : start + TAKEN_WITHIN_MS;
    while (!answered()) {
      const now = performance.now();
      if (now > takenBy) {
        if (!taken!()) return this.#missed();
        takenBy = Infinity;
      }
      if (now > until) return this.#missed();
    }
    this.#hits += (1 - this.#hits) / 8;
    return true;
  }

  #missed(): false {
    this.#hits -= this.#hits / 8;
    return false;
  }
}
