// The timers that watch a connection as a whole: the heartbeat (a silent peer), the idle
// timeout (nothing carried for a while) and whether they and the call deadlines keep the
// process alive. The engine reports activity; these decide when it is time to act.

import type { Deadlines } from "./_core.ts";
import { Heartbeat, type HeartbeatConfig } from "./_heartbeat.ts";
import { IdleTimer } from "./_idle.ts";

/** What the heartbeat asks of its connection. */
export interface BeatHost {
  /** Sends a PING. */
  ping(): void;
  /** No frame arrived for `silent` ms and the peer had that long to answer a PING. */
  timedOut(silent: number): void;
}

/** What the idle timer asks of its connection. */
export interface IdleCloseHost {
  /** Whether any call or stream is in flight. */
  busy(): boolean;
  /** The connection carried nothing for the idle timeout: close it. */
  idle(): void;
}

/** A connection's heartbeat and idle timer, and whether its timers hold the process. */
export class ConnectionTimers {
  readonly #deadlines: Deadlines;
  #heartbeat: Heartbeat | undefined;
  #idle: IdleTimer | undefined;
  /** When this side last started or finished a call or sent a notification. */
  #activeAt = 0;
  #hold = true;

  constructor(deadlines: Deadlines) {
    this.#deadlines = deadlines;
  }

  /** This side started or finished something; only the idle timer needs to know. */
  active(): void {
    // A clock read per finished call shows in small calls in flight (bench/ab_engine.ts
    // calls256), so it is taken only when an idle timer runs.
    if (this.#idle !== undefined) this.#activeAt = performance.now();
  }

  startHeartbeat(config: HeartbeatConfig, host: BeatHost): void {
    const deadlines = this.#deadlines;
    this.#heartbeat = new Heartbeat(config, {
      silentFor: () => performance.now() - deadlines.receivedAt,
      ping: () => host.ping(),
      timedOut: (silent) => host.timedOut(silent),
    });
    if (!this.#hold) this.#heartbeat.hold(false);
  }

  startIdle(timeout: number, host: IdleCloseHost): void {
    if (timeout === Infinity) return;
    this.#activeAt = performance.now();
    this.#idle = new IdleTimer(timeout, {
      lastActivity: () => Math.max(this.#activeAt, this.#deadlines.receivedAt),
      busy: () => host.busy(),
      idle: () => host.idle(),
    });
    if (!this.#hold) this.#idle.hold(false);
  }

  /** Whether these timers and the call deadlines keep the process alive. */
  hold(hold: boolean): void {
    this.#hold = hold;
    this.#deadlines.hold(hold);
    this.#heartbeat?.hold(hold);
    this.#idle?.hold(hold);
  }

  stop(): void {
    this.#deadlines.stop();
    this.#heartbeat?.stop();
    this.#idle?.stop();
  }
}
