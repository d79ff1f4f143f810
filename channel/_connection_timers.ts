// The timers that watch a connection as a whole: the heartbeat (a silent peer), the idle
// timeout (nothing carried for a while) and whether they keep the process alive. The engine
// reports activity; these decide when it is time to act. The engine (_core.ts) imports this
// module when a channel that sets a heartbeat or an idle timeout opens, so a channel without
// them does not load it.

import { refTimer, timerDelay } from "../_runtime.ts";

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
  /** The bytes written to the peer so far while more wait to be written, else undefined. */
  unwritten(): number | undefined;
  /**
   * The connection carried nothing for the idle timeout: close it. `stalled`: it is busy, but
   * the peer read nothing of what waits for it for that long.
   */
  idle(stalled: boolean): void;
}

/** When frames last arrived (`performance.now()` time): the channel's deadline timer keeps it. */
export interface FrameClock {
  readonly receivedAt: number;
}

/** A connection's heartbeat and idle timer, and whether they hold the process. */
export class ConnectionTimers {
  readonly #frames: FrameClock;
  #heartbeat: Heartbeat | undefined;
  #idle: IdleTimer | undefined;
  /** When this side last started or finished a call or sent a notification. */
  #activeAt = 0;
  #hold = true;

  constructor(frames: FrameClock) {
    this.#frames = frames;
  }

  /** This side started or finished something; only the idle timer needs to know. */
  active(): void {
    // A clock read per finished call shows in small calls in flight (bench/ab_engine.ts
    // calls256), so it is taken only when an idle timer runs.
    if (this.#idle !== undefined) this.#activeAt = performance.now();
  }

  startHeartbeat(config: HeartbeatConfig, host: BeatHost): void {
    const frames = this.#frames;
    this.#heartbeat = new Heartbeat(config, {
      silentFor: () => performance.now() - frames.receivedAt,
      ping: () => host.ping(),
      timedOut: (silent) => host.timedOut(silent),
    });
    if (!this.#hold) this.#heartbeat.hold(false);
  }

  startIdle(timeout: number, host: IdleCloseHost): void {
    if (timeout === Infinity) return;
    this.#activeAt = performance.now();
    this.#idle = new IdleTimer(timeout, {
      lastActivity: () => Math.max(this.#activeAt, this.#frames.receivedAt),
      busy: () => host.busy(),
      unwritten: () => host.unwritten(),
      idle: (_, stalled) => host.idle(stalled),
    });
    if (!this.#hold) this.#idle.hold(false);
  }

  /** Whether these timers keep the process alive. */
  hold(hold: boolean): void {
    this.#hold = hold;
    this.#heartbeat?.hold(hold);
    this.#idle?.hold(hold);
  }

  stop(): void {
    this.#heartbeat?.stop();
    this.#idle?.stop();
  }
}

// ---------------------------------------------------------------- the heartbeat

// A ping every interval, and a failure when nothing at all arrived from the peer for longer
// than the timeout, and the peer had that long to answer a ping. The second condition keeps
// a stall of this side's own event loop (a long synchronous task, a loaded machine: the timer
// fires late) from being taken for a silent peer: the first late tick pings, and only a peer
// that stays silent for the timeout after that ping is given up on.

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
    }, timerDelay(config.interval));
  }

  stop(): void {
    clearInterval(this.#interval);
  }

  /** Whether the beat keeps the process alive. */
  hold(yes: boolean): void {
    refTimer(this.#interval, yes);
  }
}

// ---------------------------------------------------------------- the idle timeout

// A connection that has carried no frame in either direction and has had nothing in flight
// for `timeout` ms is closed gracefully. One timer, rescheduled on each firing for the
// remaining time, so an active connection costs no work per frame. A busy connection whose
// peer read nothing of what waits for it over a whole `timeout` (the bytes written did not
// move between two firings) is stalled, whatever the peer sends meanwhile: a peer that never
// reads cannot hold it, and its calls, for good.

/** What the idle timer asks of its connection. */
export interface IdleHost {
  /** When a frame last arrived or was started from this side (`performance.now()` time). */
  lastActivity(): number;
  /** Whether any call or stream is in flight, in either direction. */
  busy(): boolean;
  /** The bytes written to the peer so far while more wait to be written, else undefined. */
  unwritten(): number | undefined;
  /** The connection has been idle for `idle` ms, or `stalled` (see above): close it. */
  idle(idle: number, stalled: boolean): void;
}

/** A running idle timer; `stop()` ends it. */
export class IdleTimer {
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #timeout: number;
  readonly #host: IdleHost;
  #held = true;
  /** What `unwritten()` said at the last firing, to tell a stall. */
  #writtenAtLastCheck: number | undefined;

  constructor(timeout: number, host: IdleHost) {
    this.#timeout = timeout;
    this.#host = host;
    this.#schedule(timeout);
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Whether the timer keeps the process alive (see ChannelCore.holdProcess). */
  hold(yes: boolean): void {
    this.#held = yes;
    if (this.#timer === undefined) return;
    refTimer(this.#timer, yes);
  }

  #schedule(delay: number): void {
    this.#timer = setTimeout(() => this.#check(), timerDelay(delay));
    if (!this.#held) refTimer(this.#timer, false);
  }

  #check(): void {
    const host = this.#host;
    // Bytes waiting for the peer make the connection busy too.
    const written = host.unwritten();
    if (written !== undefined && written === this.#writtenAtLastCheck) {
      this.#timer = undefined;
      return host.idle(this.#timeout, true);
    }
    this.#writtenAtLastCheck = written;
    if (written !== undefined || host.busy()) return this.#schedule(this.#timeout);
    const idle = performance.now() - host.lastActivity();
    if (idle >= this.#timeout) {
      this.#timer = undefined;
      host.idle(idle, false);
    } else {
      this.#schedule(this.#timeout - idle);
    }
  }
}
