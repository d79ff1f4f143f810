// The heartbeat: a ping every interval, and a failure when nothing at all arrived from the
// peer for longer than the timeout, and the peer had that long to answer a ping. The second
// condition keeps a stall of this side's own event loop (a long synchronous task, a loaded
// machine: the timer fires late) from being taken for a silent peer: the first late tick
// pings, and only a peer that stays silent for the timeout after that ping is given up on.

/** Heartbeat settings. */
export interface HeartbeatConfig {
  readonly interval: number;
  readonly timeout: number;
}

/** What the heartbeat does on each beat. */
export interface HeartbeatHost {
  /** Milliseconds since the last frame arrived. */
  silentFor(): number;
  /** Sends a ping. */
  ping(): void;
  /** The peer went silent for `silent` ms. */
  timedOut(silent: number): void;
}

/** A running heartbeat; `stop()` ends it. */
export class Heartbeat {
  readonly #interval: ReturnType<typeof setInterval>;
  /** When the first ping the peer has not answered (with any frame) was sent. */
  #unansweredSince = NaN;

  constructor(config: HeartbeatConfig, host: HeartbeatHost) {
    this.#interval = setInterval(() => {
      const now = performance.now();
      const silent = host.silentFor();
      // Something arrived after that ping: the peer is alive.
      if (now - silent >= this.#unansweredSince) this.#unansweredSince = NaN;
      if (silent > config.timeout && now - this.#unansweredSince > config.timeout) {
        host.timedOut(silent);
        return;
      }
      host.ping();
      if (Number.isNaN(this.#unansweredSince)) this.#unansweredSince = now;
    }, config.interval);
  }

  stop(): void {
    clearInterval(this.#interval);
  }

  /** Whether the beat keeps the process alive. */
  hold(yes: boolean): void {
    if (yes) Deno.refTimer(this.#interval);
    else Deno.unrefTimer(this.#interval);
  }
}
