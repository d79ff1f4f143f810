// The spin of the Web Worker transport. With `spinMicros`, a side stays awake after a post
// until the peer's answer is on its way, so that answer does not have to wake a sleeping
// thread. It learns that from a bell: two shared counters the peer keeps, of what it posted
// and of what it took. Every end keeps the bell of a peer that sent one, whether or not it
// spins itself: one side may spin alone.

import { Spinner } from "./_spin.ts";

/** Slots of a bell (see `PostBell.#own`). */
const BELL_POSTED = 0;
const BELL_TAKEN = 1;

/**
 * Channels of this thread that posted data and have had none back since. A spin waits for one
 * channel's answer while every other channel's messages wait behind it, so a channel spins
 * only when it is the one waiting: a pool's parent, talking to several workers at once, does
 * not (without this rule, a 2-thread pool whose ends all spun made fewer calls/s than one
 * whose ends did not, on a loaded machine: `deno task demo`, its thread pool).
 */
let awaitingChannels = 0;

/** Where a bell's channel posts: its endpoint (a Worker, a worker's `self`, a MessagePort). */
export interface PostTarget {
  postMessage(message: unknown, transfer: Transferable[]): void;
}

/** A channel's data posts and arrivals, counted for both bells, and its spin after a post. */
export class PostBell {
  readonly #endpoint: PostTarget;
  /**
   * Shared memory only the peer writes (sent to it before our first data message): at
   * BELL_POSTED the count of data messages it posted here, stored after each post; at
   * BELL_TAKEN the count of ours it received, stored as each arrives. Undefined when not
   * spinning.
   */
  readonly #own: Int32Array | undefined;
  #ownSent = false;
  /** The peer's bell, once it sent it: kept up to date as described at `#own`. */
  #peer: Int32Array | undefined;
  /** Data messages received, compared with the bell: a higher bell is a message on its way. */
  #received = 0;
  /** Data messages posted: what the peer's bell holds once the peer sent it. */
  #posted = 0;
  readonly #spinner: Spinner;
  #spinQueued = false;
  /** Counted in awaitingChannels: posted data, and has had none back since. */
  #awaiting = false;
  /** Whether a read of the channel waits for the answer (a spin is of use only then). */
  readonly #readWaits: () => boolean;

  constructor(endpoint: PostTarget, spinMicros: number, readWaits: () => boolean) {
    this.#endpoint = endpoint;
    this.#readWaits = readWaits;
    this.#spinner = new Spinner(spinMicros);
    if (this.#spinner.enabled && typeof SharedArrayBuffer === "function") {
      this.#own = new Int32Array(new SharedArrayBuffer(8));
    }
  }

  /**
   * Posts a data message, rings the peer's bell, and, when this side spins, queues a spin for
   * the answer. A post to a thread whose CPU went idle wakes it through the OS (and, in a VM,
   * the hypervisor), which costs the poster and the wakee far more than a post to a thread
   * that is still running: staying awake after a post until the peer's answer is posted makes
   * that answer the cheap kind (bench/report/notes.md, "The parent's end waits by default").
   */
  post(message: unknown, transfer: Transferable[]): void {
    const own = this.#own;
    if (own !== undefined && !this.#ownSent) {
      this.#ownSent = true;
      this.#endpoint.postMessage(own, []);
    }
    this.#endpoint.postMessage(message, transfer);
    this.#posted = (this.#posted + 1) | 0;
    const peer = this.#peer;
    if (peer !== undefined) Atomics.store(peer, BELL_POSTED, this.#posted);
    if (own === undefined) return;
    if (!this.#awaiting) {
      this.#awaiting = true;
      awaitingChannels++;
    }
    if (!this.#spinQueued) {
      this.#spinQueued = true;
      queueMicrotask(this.#spin);
    }
  }

  /** A data message arrived: the peer's bell learns it, and this side is answered. */
  arrived(): void {
    this.#received = (this.#received + 1) | 0;
    const peer = this.#peer;
    if (peer !== undefined) Atomics.store(peer, BELL_TAKEN, this.#received);
    this.answered();
  }

  /** Takes `data` as the peer's bell if it is one; false when it is not. */
  takePeerBell(data: unknown): boolean {
    if (
      !(data instanceof Int32Array && data.buffer instanceof SharedArrayBuffer &&
        data.length === 2)
    ) return false;
    this.#peer = data;
    Atomics.store(data, BELL_POSTED, this.#posted);
    Atomics.store(data, BELL_TAKEN, this.#received);
    return true;
  }

  /** This side waits for no answer any more (one came, or the channel is over). */
  answered(): void {
    if (!this.#awaiting) return;
    this.#awaiting = false;
    awaitingChannels--;
  }

  /**
   * In the microtask after a post, while a read waits for the answer: spins until the peer's
   * bell says a message is on its way (the event loop then finds it queued), as `Spinner`
   * allows. The bell went before the first data message, so the peer bumps it after each post
   * that answers one, whether or not it spins itself.
   */
  readonly #spin = (): void => {
    this.#spinQueued = false;
    if (!this.#readWaits() || awaitingChannels > 1) return;
    if (this.#spinner.shouldSpin()) this.#spinner.spinUntil(this.#rang, this.#taken);
  };

  /** Whether the peer posted a message not received yet. */
  readonly #rang = (): boolean =>
    ((Atomics.load(this.#own!, BELL_POSTED) - this.#received) | 0) > 0;

  /** Whether the peer received every data message this side posted. */
  readonly #taken = (): boolean => ((Atomics.load(this.#own!, BELL_TAKEN) - this.#posted) | 0) >= 0;
}
