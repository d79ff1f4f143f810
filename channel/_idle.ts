// The idle timeout: a connection that has carried no frame in either direction and has had
// nothing in flight for `timeout` ms is closed gracefully. One timer, rescheduled on each
// firing for the remaining time, so an active connection costs no work per frame.

/** What the idle timer asks of its connection. */
export interface IdleHost {
  /** When a frame last arrived or was started from this side (`performance.now()` time). */
  lastActivity(): number;
  /** Whether any call or stream is in flight, in either direction. */
  busy(): boolean;
  /** The connection has been idle for `idle` ms: close it. */
  idle(idle: number): void;
}

/** A running idle timer; `stop()` ends it. */
export class IdleTimer {
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #timeout: number;
  readonly #host: IdleHost;
  #held = true;

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
    if (yes) Deno.refTimer(this.#timer);
    else Deno.unrefTimer(this.#timer);
  }

  #schedule(delay: number): void {
    this.#timer = setTimeout(() => this.#check(), delay);
    if (!this.#held) Deno.unrefTimer(this.#timer);
  }

  #check(): void {
    const host = this.#host;
    if (host.busy()) return this.#schedule(this.#timeout);
    const idle = performance.now() - host.lastActivity();
    if (idle >= this.#timeout) {
      this.#timer = undefined;
      host.idle(idle);
    } else {
      this.#schedule(this.#timeout - idle);
    }
  }
}
