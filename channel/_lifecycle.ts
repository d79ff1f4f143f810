// The lifecycle of a connection as one explicit state machine:
//
//   HANDSHAKE ──opened──▶ OPEN ──close / peer's goodbye──▶ CLOSING ──drained──▶ CLOSED
//       │                  │                                                     ▲
//       └──────────────────┴─────────── failure, abort, timeout ────────────────┘
//
// Every transition goes through `enter`, which refuses the ones the diagram lacks and does
// what leaving a state implies (its timer stops; leaving OPEN ends the waits of `ready()`).
// Beside the state it keeps what both goodbyes were and what the channel failed with.

import type { Goodbye } from "../protocol/handshake.ts";
import type { ConnectionClosedError } from "./errors.ts";

/** Cancels the state's timeout (see `fireAt`). */
type Timer = () => void;

/** Waiting for the peer's handshake. */
export const HANDSHAKE = 0;
/** Calls flow both ways. */
export const OPEN = 1;
/** This side or the peer said goodbye; in-flight calls drain. */
export const CLOSING = 2;
/** Over; the transport is being or has been released. */
export const CLOSED = 3;

const TRANSITIONS: readonly (readonly number[])[] = [
  /* HANDSHAKE */ [OPEN, CLOSED],
  /* OPEN */ [CLOSING, CLOSED],
  /* CLOSING */ [CLOSED],
  /* CLOSED */ [],
];

/** The state of one connection. */
export class Lifecycle {
  #state = HANDSHAKE;
  /** The timer of the current state: the handshake timeout, then the drain timeout. */
  #timer: Timer | undefined;
  /** Resolved when the channel stops being open, to end the waits of `ready()`. */
  #leftOpen: PromiseWithResolvers<void> | undefined;
  #sentGoodbye = false;
  /** Why this side said goodbye, when it said (an idle timeout). */
  #goodbyeReason: string | undefined;
  #peerGoodbye: Goodbye | undefined;
  /** What the channel failed with (undefined while open, and after a graceful close). */
  #failure: ConnectionClosedError | undefined;

  get state(): number {
    return this.#state;
  }

  get handshaking(): boolean {
    return this.#state === HANDSHAKE;
  }

  get open(): boolean {
    return this.#state === OPEN;
  }

  get closing(): boolean {
    return this.#state === CLOSING;
  }

  get closed(): boolean {
    return this.#state === CLOSED;
  }

  /** The peer's goodbye, once it said it. */
  get peerGoodbye(): Goodbye | undefined {
    return this.#peerGoodbye;
  }

  /** Whether the peer said goodbye (it starts nothing new after it). */
  get peerClosing(): boolean {
    return this.#peerGoodbye !== undefined;
  }

  get failure(): ConnectionClosedError | undefined {
    return this.#failure;
  }

  /** The handshake began; `timer` is its timeout (none for an infinite one). */
  startHandshake(timer: Timer | undefined): void {
    if (this.#state === HANDSHAKE) this.#timer = timer;
    else timer?.();
  }

  /**
   * Moves to `next`; false (and nothing changes) when the diagram has no such transition.
   * `timer` becomes the new state's timer (the handshake or drain timeout).
   */
  enter(next: number, timer?: Timer): boolean {
    if (!TRANSITIONS[this.#state].includes(next)) return false;
    if (this.#state === OPEN) {
      this.#leftOpen?.resolve();
      this.#leftOpen = undefined;
    }
    this.#timer?.();
    this.#timer = timer;
    this.#state = next;
    return true;
  }

  /** Moves to CLOSED because of `failure`; false when already closed. */
  fail(failure: ConnectionClosedError): boolean {
    if (!this.enter(CLOSED)) return false;
    this.#failure = failure;
    return true;
  }

  /** The state's timer fired: it is no longer pending. */
  timerFired(): void {
    this.#timer = undefined;
  }

  /** Settles when the channel leaves OPEN. */
  leavesOpen(): Promise<void> {
    this.#leftOpen ??= Promise.withResolvers<void>();
    return this.#leftOpen.promise;
  }

  /** Why this side said goodbye, when it said. */
  get goodbyeReason(): string | undefined {
    return this.#goodbyeReason;
  }

  /** Records that this side says goodbye (and why); false when it did already. */
  sayGoodbye(reason?: string): boolean {
    if (this.#sentGoodbye) return false;
    this.#sentGoodbye = true;
    this.#goodbyeReason = reason;
    return true;
  }

  /** Records the peer's goodbye. */
  peerSaidGoodbye(goodbye: Goodbye): void {
    this.#peerGoodbye = goodbye;
  }
}
