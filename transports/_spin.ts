// The spin of the thread transports: a side that expects the other thread's answer soon spins
// for it a short while instead of sleeping, since waking a thread that went to sleep costs far
// more than the wait (bench/threads_layers.ts). One policy for the shared ring and the Web
// Worker transport: spin for at most `spinMicros`, and back off while spins mostly miss.

/**
 * Below this share of recent spins that saw an answer (a moving average, each spin weighing
 * 1/8), a side mostly sleeps at once. A few misses in a row are common even when answers come
 * quickly (a GC pause, the peer preempted once), and backing off after them cost most spins:
 * backing off after 4 misses in a row made the ring's small call several times slower than
 * this rule does (bench/threads_ratios.ts, its shared ring row).
 */
const HIT_RATE_TO_SPIN = 0.2;
/** While backed off, one wait in this many spins again, to learn when answers come quickly. */
const PROBE_EVERY = 32;
/**
 * How long a spin that can tell whether the peer took its message waits for that, at most:
 * past the time a sleeping Worker usually takes to wake, a peer that has not taken it is not
 * running, and while another process keeps a core busy it is mostly waiting for the CPU the
 * spin holds (it took the message only once the spin was over). Measured with timestamps in
 * both threads: bench/report/notes.md, "The parent's end waits by default".
 */
const TAKEN_WITHIN_MS = 0.07;

/**
 * The spin of a thread transport's options: `spinMicros`, or `byDefault` when it is absent.
 * @throws {RangeError} Outside 0 to 1,000,000 µs.
 */
export function spinMicrosOf(spinMicros: number | undefined, byDefault: number): number {
  const spin = spinMicros ?? byDefault;
  if (!(spin >= 0 && spin <= 1_000_000)) {
    throw new RangeError(`spinMicros must be from 0 to 1000000, got ${spin}`);
  }
  return spin;
}

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
