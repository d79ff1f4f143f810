// The two faces of a call's outcome: the object a remote method returns is awaitable (a unary
// result) and async-iterable (a result stream); the first use decides which, and the
// remote's TypeScript type shows only the right face. The call's life on the wire is the
// subclass's (OutgoingCall, _outgoing_calls.ts); this class only receives what the wire
// brought. It is a DualCall, the one call-object base that the worker's and the pool's calls
// share too: catch, finally, readable and cancel come from there.

import { ConduitError } from "../errors.ts";
import { type InboxOwner, StreamInbox } from "./_stream.ts";
import { DualCall } from "./_remote.ts";

const FACE_NONE = 0;
const FACE_PROMISE = 1;
const FACE_STREAM = 2;

const PENDING = 0;
const VALUE = 1;
const FAILURE = 2;

/** Whether the call is over on the wire (see `whenOver`), and how; a failure's error is `#error`. */
const NOT_OVER = 0;
const OVER_OK = 1;
const OVER_FAILED = 2;

/** Told once when a call is over, whichever face it is read through (see `whenOver`). */
export type OverListener = (ok: boolean, error: unknown) => void;

/** A call that says when it is over without choosing its face (what a worker pool needs). */
export interface Overseeable {
  /**
   * Calls `listener` once the call is over on the wire: its single result or its stream's
   * end arrived (`ok`), or it failed (`error`). It does not fix the call's face. Listeners
   * are called in the order they were added.
   */
  whenOver(listener: OverListener): void;
}

/** The outcome of one call, as a promise or as a stream. */
export abstract class CallResult extends DualCall implements InboxOwner, Overseeable {
  readonly method: string;
  readonly #window: number;
  #face = FACE_NONE;
  /** Whether the call is over on the wire, and who waits to hear it. */
  #over = NOT_OVER;
  #overListener: OverListener | undefined;
  #outcome = PENDING;
  #value: unknown;
  #error: unknown;
  #promise: Promise<unknown> | undefined;
  #resolve: ((value: unknown) => void) | undefined;
  #reject: ((error: unknown) => void) | undefined;
  #inbox: StreamInbox<unknown> | undefined;

  constructor(method: string, window: number) {
    super();
    this.method = method;
    this.#window = window;
  }

  /** Cancels the call on the wire (the caller gave up on it). */
  abstract cancelCall(error: unknown, reason: string): void;
  /** The call turned out to be a stream while awaited as a promise: stop it. */
  protected abstract expectedOneValue(error: unknown): void;
  abstract grantCredit(bytes: number): void;
  abstract abandonStream(): void;

  // ---- the promise face ----

  then<R1 = unknown, R2 = never>(
    onfulfilled?: ((value: unknown) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.#asPromise().then(onfulfilled, onrejected);
  }

  // ---- the stream face ----

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    if (this.#face === FACE_PROMISE) {
      throw new ConduitError(`The call to "${this.method}" was already awaited as a promise`);
    }
    this.#face = FACE_STREAM;
    const inbox = this.#streamInbox();
    if (this.#outcome === VALUE) {
      inbox.fail(
        new ConduitError(
          `"${this.method}" returned a single value, not a stream: await it instead`,
        ),
        true,
      );
    }
    return inbox;
  }

  protected cancelUnread(reason: unknown): Promise<void> {
    if (this.#inbox !== undefined && this.#face === FACE_STREAM) {
      return this.#inbox.return().then(() => {});
    }
    this.cancelCall(
      reason ?? new ConduitError(`The call to "${this.method}" was cancelled`),
      reasonText(reason) ?? "cancelled by the caller",
    );
    return Promise.resolve();
  }

  whenOver(listener: OverListener): void {
    if (this.#over !== NOT_OVER) {
      return listener(this.#over === OVER_OK, this.#over === OVER_OK ? undefined : this.#error);
    }
    const first = this.#overListener;
    this.#overListener = first === undefined ? listener : (ok, error) => {
      first(ok, error);
      listener(ok, error);
    };
  }

  #isOver(ok: boolean, error: unknown): void {
    if (this.#over !== NOT_OVER) return;
    this.#over = ok ? OVER_OK : OVER_FAILED;
    const listener = this.#overListener;
    if (listener === undefined) return;
    this.#overListener = undefined;
    listener(ok, error);
  }

  // ---- what the wire brought ----

  /** The single result arrived. */
  settle(value: unknown): void {
    if (this.#outcome !== PENDING) return;
    this.#outcome = VALUE;
    this.#value = value;
    this.#isOver(true, undefined);
    if (this.#resolve !== undefined) this.#resolve(value);
    else if (this.#inbox !== undefined) {
      this.#inbox.fail(
        new ConduitError(
          `"${this.method}" returned a single value, not a stream: await it instead`,
        ),
        true,
      );
    }
  }

  /** The call failed; `immediate` drops buffered stream items (see StreamInbox.fail). */
  fail(error: unknown, immediate: boolean): void {
    if (this.#outcome !== PENDING) return;
    this.#outcome = FAILURE;
    this.#error = error;
    this.#isOver(false, error);
    this.#reject?.(error);
    this.#inbox?.fail(error, immediate);
  }

  /**
   * A stream item arrived; returns false when it exceeds the stream's credit. Awaited as a
   * promise, the call fails instead.
   */
  data(item: unknown, cost: number): boolean {
    const inbox = this.#streamInbox();
    if (!inbox.push(item, cost)) return false;
    if (this.#face === FACE_PROMISE) this.#failAsStream();
    return true;
  }

  /** Counts a stream item that could not be decoded; false when beyond credit. */
  charge(cost: number): boolean {
    return this.#streamInbox().charge(cost);
  }

  /** The result stream ended. */
  end(): void {
    this.#isOver(true, undefined);
    this.#streamInbox().end();
    if (this.#face === FACE_PROMISE) this.#failAsStream();
  }

  #streamInbox(): StreamInbox<unknown> {
    if (this.#inbox === undefined) {
      this.#inbox = new StreamInbox<unknown>(this, this.#window);
      if (this.#outcome === FAILURE) this.#inbox.fail(this.#error, true);
    }
    return this.#inbox;
  }

  #failAsStream(): void {
    const error = new ConduitError(
      `"${this.method}" returned a stream: iterate it instead of awaiting it`,
    );
    this.#reject?.(error);
    this.#reject = this.#resolve = undefined;
    this.expectedOneValue(error);
  }

  #asPromise(): Promise<unknown> {
    if (this.#promise !== undefined) return this.#promise;
    if (this.#face === FACE_STREAM) {
      return Promise.reject(
        new ConduitError(`The call to "${this.method}" is being read as a stream`),
      );
    }
    this.#face = FACE_PROMISE;
    if (this.#inbox !== undefined) {
      const error = new ConduitError(
        `"${this.method}" returned a stream: iterate it instead of awaiting it`,
      );
      this.#promise = Promise.reject(error);
      this.expectedOneValue(error);
    } else if (this.#outcome === VALUE) {
      this.#promise = Promise.resolve(this.#value);
    } else if (this.#outcome === FAILURE) {
      this.#promise = Promise.reject(this.#error);
    } else {
      this.#promise = new Promise<unknown>((resolve, reject) => {
        this.#resolve = resolve;
        this.#reject = reject;
      });
    }
    return this.#promise;
  }
}

/** The words of a cancel reason, for the peer. */
export function reasonText(reason: unknown): string | undefined {
  if (reason === undefined) return undefined;
  if (reason instanceof Error) return reason.message;
  return String(reason);
}
