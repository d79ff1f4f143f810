// The heartbeat: a ping every interval, and a failure when nothing at all arrived from the
// peer for longer than the timeout.

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

  constructor(config: HeartbeatConfig, host: HeartbeatHost) {
    this.#interval = setInterval(() => {
      const silent = host.silentFor();
      if (silent > config.timeout) host.timedOut(silent);
      else host.ping();
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
