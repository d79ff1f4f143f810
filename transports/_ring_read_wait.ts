// How a read of the shared ring transport waits for the peer's next write. A reader with
// nothing to read sleeps in Atomics.waitAsync, and a writer wakes it with Atomics.notify only
// when it sleeps. A wake-up that way is a task on the reader's event loop and costs about as
// much as a postMessage, so once this side has written (a call, or a reply after which the
// next call is likely), it spins on the ring for a while in the microtask after its write,
// with the flag that asks for a notify lowered: an answer within the spin is seen at once and
// costs the writer no notify. The spin waits for that write on purpose: a read is asked for as
// soon as the last chunk is handled, before this side writes its next call, and a spin there
// would hold that call back for the whole spin.

import { READER_SLEEPS, WRITE_SEQ } from "./_ring.ts";
import { Spinner } from "./_spin.ts";

/** The wait of a read on the incoming ring: asleep in waitAsync, or spinning after a write. */
export class RingReadWait {
  /** The incoming ring's header. */
  readonly #header: Int32Array;
  readonly #spinner: Spinner;
  /** Whether the channel is still open (a spin is of no use otherwise). */
  readonly #open: () => boolean;
  /** Wakes the read waiting for the peer's next write, if any. */
  #readWaiter: (() => void) | undefined;
  /** The incoming WRITE_SEQ the waiting read saw last. */
  #readSeq = 0;
  /** The incoming WRITE_SEQ a spin began at. */
  #spinSeen = 0;
  /**
   * The one waitAsync on the incoming WRITE_SEQ in flight, if any: a read whose wait a spin
   * ended leaves it in flight, and the next read to sleep waits on it instead of adding one.
   */
  #sleeper: Promise<void> | undefined;
  /** This side wrote since the last spin: an answer may come soon. */
  #wrote = false;
  #spinQueued = false;

  constructor(header: Int32Array, spinMicros: number, open: () => boolean) {
    this.#header = header;
    this.#spinner = new Spinner(spinMicros);
    this.#open = open;
  }

  /**
   * Waits until the peer bumps the incoming WRITE_SEQ from `seen` (or `wake()` is called):
   * asleep in waitAsync, unless a spin after this side's write sees it first.
   */
  wait(seen: number): Promise<void> {
    const header = this.#header;
    Atomics.store(header, READER_SLEEPS, 1);
    if (Atomics.load(header, WRITE_SEQ) !== seen || !this.#ensureSleeper(seen)) {
      Atomics.store(header, READER_SLEEPS, 0);
      return Promise.resolve();
    }
    this.#readSeq = seen;
    const waiting = new Promise<void>((resolve) => this.#readWaiter = resolve);
    if (this.#wrote) this.#queueSpin();
    return waiting;
  }

  /** This side wrote: the answer may come soon, so a waiting read spins for it. */
  wrote(): void {
    this.#wrote = true;
    if (this.#readWaiter !== undefined) this.#queueSpin();
  }

  /** Ends the wait of a read (the channel fails or is released), and the waitAsync under it. */
  wake(): void {
    const wake = this.#readWaiter;
    this.#readWaiter = undefined;
    Atomics.notify(this.#header, WRITE_SEQ);
    wake?.();
  }

  /** Makes sure a waitAsync on the incoming WRITE_SEQ is in flight; false if it moved from `seen`. */
  #ensureSleeper(seen: number): boolean {
    if (this.#sleeper !== undefined) return true;
    const { async, value } = Atomics.waitAsync(this.#header, WRITE_SEQ, seen);
    if (!async) return false;
    this.#sleeper = value.then(this.#onNotified);
    return true;
  }

  readonly #onNotified = (): void => {
    this.#sleeper = undefined;
    Atomics.store(this.#header, READER_SLEEPS, 0);
    this.#wakeReader();
  };

  #wakeReader(): void {
    const wake = this.#readWaiter;
    if (wake === undefined) return;
    this.#readWaiter = undefined;
    wake();
  }

  #queueSpin(): void {
    if (this.#spinQueued || !this.#spinner.enabled) return;
    this.#spinQueued = true;
    queueMicrotask(this.#spin);
  }

  /**
   * Spins on the incoming ring while a read waits, with READER_SLEEPS lowered so the peer's
   * next write costs it no notify, as `Spinner` allows (it backs off while spins miss: on a
   * busy machine the peer may not even be scheduled, and spinning only takes its CPU).
   */
  readonly #spin = (): void => {
    this.#spinQueued = false;
    this.#wrote = false;
    if (this.#readWaiter === undefined || !this.#open() || !this.#spinner.shouldSpin()) return;
    const header = this.#header;
    const seen = this.#spinSeen = this.#readSeq;
    Atomics.store(header, READER_SLEEPS, 0);
    if (this.#spinner.spinUntil(this.#peerWrote)) {
      this.#wakeReader();
      return;
    }
    // Back to sleep: a write from now on sees the flag and notifies the waitAsync in flight.
    Atomics.store(header, READER_SLEEPS, 1);
    if (Atomics.load(header, WRITE_SEQ) !== seen || !this.#ensureSleeper(seen)) {
      Atomics.store(header, READER_SLEEPS, 0);
      this.#wakeReader();
    }
  };

  /** Whether the peer wrote since the spin began (the WRITE_SEQ it saw moved). */
  readonly #peerWrote = (): boolean => Atomics.load(this.#header, WRITE_SEQ) !== this.#spinSeen;
}
