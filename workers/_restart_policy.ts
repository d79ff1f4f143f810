// When a pool restarts a crashed worker: exponential backoff from `restartDelay` up to
// `maxRestartDelay`, and a crash loop (more than `maxRestarts` crashes within
// `restartWindow`, or as many starts in a row that all failed, however slowly: a worker that
// fails only at its handshake timeout never piles up crashes in a window) stops restarting.
// Pure: the caller passes the time, so a test drives it with a fake clock.

import { integerOption, numberOption } from "../_options.ts";

/** The restart policy's settings, in milliseconds and counts. */
export interface RestartPolicyOptions {
  /** The delay before the first restart; it doubles with each crash within the window. */
  restartDelay: number;
  /** The longest delay before a restart. */
  maxRestartDelay: number;
  /** How many crashes within `restartWindow` are survived; one more is a crash loop. */
  maxRestarts: number;
  /** The window crashes are counted in. */
  restartWindow: number;
}

/**
 * What to do after a crash: restart after `delay` ms, or give up (a crash loop of `crashes`
 * within `window` ms).
 */
export type RestartDecision =
  | { restart: true; delay: number; crashes: number }
  | { restart: false; crashes: number; window: number };

/** Counts crashes in a sliding window and says when, and whether, to restart. */
export class RestartPolicy {
  readonly restartDelay: number;
  readonly maxRestartDelay: number;
  readonly maxRestarts: number;
  readonly restartWindow: number;
  /** When the crashes within the window happened, oldest first. */
  #crashTimes: number[] = [];
  /** When each start failed since a worker last started, oldest first. */
  #failedStarts: number[] = [];

  /** @throws {RangeError} When a setting is out of range. */
  constructor(options: RestartPolicyOptions) {
    this.restartDelay = numberOption("restartDelay", options.restartDelay, 0);
    this.maxRestartDelay = numberOption("maxRestartDelay", options.maxRestartDelay, 0);
    this.maxRestarts = integerOption("maxRestarts", options.maxRestarts, 0);
    this.restartWindow = numberOption("restartWindow", options.restartWindow, 0);
  }

  /** A worker started: failed starts before it no longer count. */
  started(): void {
    this.#failedStarts = [];
  }

  /**
   * Records a crash at time `now` (ms, any monotonic clock) and decides. `starting`: the
   * worker failed to start.
   */
  crashed(now: number, starting = false): RestartDecision {
    this.#crashTimes = this.#crashTimes.filter((t) => now - t < this.restartWindow);
    this.#crashTimes.push(now);
    const crashes = this.#crashTimes.length;
    if (crashes > this.maxRestarts) return { restart: false, crashes, window: this.restartWindow };
    if (starting) this.#failedStarts.push(now);
    const failed = this.#failedStarts;
    if (failed.length > this.maxRestarts) {
      return { restart: false, crashes: failed.length, window: Math.round(now - failed[0]) };
    }
    const delay = Math.min(this.restartDelay * 2 ** (crashes - 1), this.maxRestartDelay);
    return { restart: true, delay, crashes };
  }
}
