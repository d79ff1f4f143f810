// The caller's side of one call. The object a remote method returns is this call itself: it
// is awaitable (a unary result) and async-iterable (a result stream); the first use decides
// which, and the remote's TypeScript type shows only the right face.

import { ConduitError } from "../errors.ts";
import type { MethodCodecs } from "./_codecs.ts";
import { type InboxOwner, type PumpOwner, StreamInbox, type StreamPump } from "./_stream.ts";
import type { RemoteStream } from "./types.ts";

/** What an outgoing call needs from the channel core. */
export interface OutgoingHost {
  /** Cancels the call: drops it from the queue, or sends CANCEL and waits for its terminal frame. */
  cancelCall(call: OutgoingCall, error: unknown, reason: string, code?: string): void;
  /** Sends CREDIT(R=0) for the call's result stream. */
  sendResultCredit(call: OutgoingCall, bytes: number): void;
  /** Sends one param stream item as DATA(R=0); returns its cost. */
  sendParamItem(call: OutgoingCall, value: unknown): number;
  /** Sends END(R=0). */
  sendParamEnd(call: OutgoingCall): void;
  /** Sends ERROR(R=0). */
  sendParamFailure(call: OutgoingCall, error: unknown): void;
  /** The transport's backpressure, as for {@linkcode PumpOwner.writable}. */
  writable(): Promise<void> | undefined;
}

/** Waiting for a slot under the peer's maxInFlight. */
export const QUEUED = 0;
/** CALL sent, terminal frame pending. */
export const SENT = 1;
/** Cancelled locally; CANCEL sent, waiting for the terminal frame to free the id. */
export const CANCELLED = 2;
/** Finished. */
export const DONE = 3;

const FACE_NONE = 0;
const FACE_PROMISE = 1;
const FACE_STREAM = 2;

const PENDING = 0;
const VALUE = 1;
const FAILURE = 2;

const EMPTY = new Uint8Array(0);

/** One call started by this side. */
export class OutgoingCall
  implements Promise<unknown>, RemoteStream<unknown>, InboxOwner, PumpOwner, EventListenerObject {
  readonly method: string;
  readonly codecs: MethodCodecs;
  readonly #host: OutgoingHost;
  readonly #window: number;
  id = 0;
  state = QUEUED;
  flags = 0;
  body: Uint8Array = EMPTY;
  source: AsyncIterable<unknown> | undefined;
  pump: StreamPump | undefined;
  /** `performance.now()` deadline, `Infinity` for none. */
  deadline = Infinity;
  timeoutMs = 0;
  signal: AbortSignal | undefined;
  /** Whether a DATA frame arrived (a RESULT may no longer follow). */
  streaming = false;
  #face = FACE_NONE;
  #outcome = PENDING;
  #value: unknown;
  #error: unknown;
  #promise: Promise<unknown> | undefined;
  #resolve: ((value: unknown) => void) | undefined;
  #reject: ((error: unknown) => void) | undefined;
  #inbox: StreamInbox<unknown> | undefined;
  #readable: ReadableStream<unknown> | undefined;

  constructor(host: OutgoingHost, method: string, codecs: MethodCodecs, window: number) {
    this.#host = host;
    this.method = method;
    this.codecs = codecs;
    this.#window = window;
  }

  // ---- the promise face ----

  get [Symbol.toStringTag](): string {
    return "OutgoingCall";
  }

  then<R1 = unknown, R2 = never>(
    onfulfilled?: ((value: unknown) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.#asPromise().then(onfulfilled, onrejected);
  }

  catch<R = never>(
    onrejected?: ((reason: unknown) => R | PromiseLike<R>) | null,
  ): Promise<unknown | R> {
    return this.#asPromise().catch(onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<unknown> {
    return this.#asPromise().finally(onfinally);
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

  get readable(): ReadableStream<unknown> {
    if (this.#readable === undefined) {
      const iterator = this[Symbol.asyncIterator]();
      this.#readable = new ReadableStream<unknown>({
        async pull(controller) {
          const step = await iterator.next();
          if (step.done) controller.close();
          else controller.enqueue(step.value);
        },
        async cancel() {
          await iterator.return?.();
        },
      }, { highWaterMark: 0 });
    }
    return this.#readable;
  }

  cancel(reason?: unknown): Promise<void> {
    if (this.#inbox !== undefined && this.#face === FACE_STREAM) {
      return this.#inbox.return().then(() => {});
    }
    this.#host.cancelCall(
      this,
      reason ?? new ConduitError(`The call to "${this.method}" was cancelled`),
      reasonText(reason) ?? "cancelled by the caller",
    );
    return Promise.resolve();
  }

  // ---- the abort signal ----

  handleEvent(): void {
    const reason = this.signal?.reason;
    this.#host.cancelCall(this, reason, reasonText(reason) ?? "aborted by the caller");
  }

  // ---- InboxOwner: the result stream ----

  grantCredit(bytes: number): void {
    this.#host.sendResultCredit(this, bytes);
  }

  abandonStream(): void {
    this.#host.cancelCall(
      this,
      new ConduitError(`The stream of "${this.method}" was cancelled`),
      "the caller stopped reading the stream",
    );
  }

  // ---- PumpOwner: the param stream ----

  sendItem(value: unknown): number {
    return this.#host.sendParamItem(this, value);
  }

  sendEnd(): void {
    this.#host.sendParamEnd(this);
  }

  sendFailure(error: unknown): void {
    this.#host.sendParamFailure(this, error);
  }

  writable(): Promise<void> | undefined {
    return this.#host.writable();
  }

  // ---- what the channel core reports ----

  /** A RESULT arrived. */
  settle(value: unknown): void {
    if (this.#outcome !== PENDING) return;
    this.#outcome = VALUE;
    this.#value = value;
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
    this.#reject?.(error);
    this.#inbox?.fail(error, immediate);
  }

  /**
   * A DATA item arrived; returns false when it exceeds the stream's credit. Awaited as a
   * promise, the call fails instead.
   */
  data(item: unknown, cost: number): boolean {
    const inbox = this.#streamInbox();
    if (!inbox.push(item, cost)) return false;
    if (this.#face === FACE_PROMISE) this.#failAsStream();
    return true;
  }

  /** Counts a DATA item that could not be decoded; false when beyond credit. */
  charge(cost: number): boolean {
    return this.#streamInbox().charge(cost);
  }

  /** END arrived. */
  end(): void {
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
    if (this.state === SENT) this.#host.cancelCall(this, error, "the caller expected one value");
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
      if (this.state === SENT) this.#host.cancelCall(this, error, "the caller expected one value");
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

function reasonText(reason: unknown): string | undefined {
  if (reason === undefined) return undefined;
  if (reason instanceof Error) return reason.message;
  return String(reason);
}
