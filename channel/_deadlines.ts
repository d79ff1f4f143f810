// Deadlines of calls in both directions, on one timer for the whole channel armed for the
// earliest deadline: calls that finish in time cost no timer work, and a firing scans the
// pending calls once. It also keeps the receipt time of the frames being dispatched, from
// which a served call's deadline counts.

import { clearTimer, refTimer, timerDelay } from "../_runtime.ts";

type Timer = ReturnType<typeof setTimeout>;

/** The channel's deadline timer. */
export class Deadlines {
  /** `performance.now()` when the frames being dispatched arrived. */
  receivedAt = 0;
  /** Bytes received from the peer so far (read with the clock, chunk by chunk). */
  bytesReceived = 0;
  readonly #expire: (now: number) => number;
  #timer: Timer | undefined;
  #at = Infinity;
  #stopped = false;
  /** Whether the timer keeps the process alive (see `hold`). */
  #hold = true;

  /**
   * @param expire Ends the calls whose deadline is at or before `now` and returns the next
   * deadline (`Infinity` for none).
   */
  constructor(expire: (now: number) => number) {
    this.#expire = expire;
  }

  /** Makes sure the timer fires by `at` (a `performance.now()` time). */
  arm(at: number): void {
    if (at >= this.#at) return;
    clearTimer(this.#timer);
    this.#at = at;
    this.#timer = setTimeout(this.#fire, timerDelay(Math.ceil(at - performance.now())));
    if (!this.#hold) refTimer(this.#timer, false);
  }

  /** Whether the channel's timers keep the process alive (see `hold`). */
  get held(): boolean {
    return this.#hold;
  }

  /**
   * Whether the timer keeps the process alive: an unref'd worker's channel lets go of it (a
   * call in flight is held by the worker's connection instead).
   */
  hold(yes: boolean): void {
    this.#hold = yes;
    if (this.#timer === undefined) return;
    refTimer(this.#timer, yes);
  }

  /** Stops the timer (the channel closed). */
  stop(): void {
    clearTimer(this.#timer);
    this.#timer = undefined;
    this.#at = Infinity;
    this.#stopped = true;
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#at = Infinity;
    if (this.#stopped) return;
    const next = this.#expire(performance.now() + 1);
    if (next !== Infinity && !this.#stopped) this.arm(next);
  };
}
