// The caller's side of one call on the wire: queued for a slot, sent, cancelled, done. Its
// state changes only here; the registry of calls (_outgoing_calls.ts) asks for the changes. It
// writes its own frames (its param stream, its result stream's credit, its cancel) through
// the outbox, and its outcome reaches the caller through its CallResult faces.

import { codecFailure } from "./_codec_failure.ts";
import { type CallMeta, callMetaBody } from "../protocol/call_meta.ts";
import { positiveOption } from "../_options.ts";
import { ConduitError } from "../errors.ts";
import { CallResult, reasonText } from "./_call_result.ts";
import type { MethodCodecs } from "../wires/codec_slots.ts";
import { type PumpOwner, StreamPump } from "./_stream.ts";
import type { Outbox } from "../wires/types.ts";
import type { CallOptions } from "./types.ts";

/** Waiting for a slot under the peer's maxInFlight. */
export const QUEUED = 0;
/** Sent, its terminal frame pending. */
export const SENT = 1;
/** Cancelled locally; the cancel is sent, waiting for the terminal frame to free the id. */
export const CANCELLED = 2;
/** Finished. */
export const DONE = 3;

const EMPTY = new Uint8Array(0);

/** What a call asks of the registry that holds it. */
export interface CallRegistry {
  /** The call has its id and is about to be written: from now on it is in flight. */
  sending(call: OutgoingCall): void;
  /** The call left the queue without being sent. */
  unqueued(call: OutgoingCall): void;
  /** The call is over on the wire (its id may be reused by nobody, but freed). */
  finished(call: OutgoingCall): void;
  /** Whether the connection is gone (a param stream must not start). */
  readonly closed: boolean;
  /** Whether the peer answers a cancelled call (else the call is finished at once). */
  readonly answersCancelled: boolean;
  /** The credit the peer grants each stream it receives. */
  readonly peerWindow: number;
}

/** One call started by this side. */
export class OutgoingCall extends CallResult implements PumpOwner, EventListenerObject {
  readonly codecs: MethodCodecs;
  readonly #registry: CallRegistry;
  readonly #outbox: Outbox;
  #id = 0;
  #state = QUEUED;
  #streamParam = false;
  /** The encoded param, until sent. */
  #body: Uint8Array = EMPTY;
  /** The param as given: a stream's source until sent, else the value `#body` came from. */
  #param: unknown;
  #pump: StreamPump | undefined;
  #deadline = Infinity;
  #timeoutMs = 0;
  #signal: AbortSignal | undefined;
  /** The caller's options: its progress callback, and the call's key and attempt. */
  #options: CallOptions | undefined;
  /** Whether a stream item arrived (a single result may no longer follow). */
  #streaming = false;
  /** Set while the param is the caller's own bytes, still held for writing. */
  #lentWritten: Promise<void> | undefined;

  constructor(
    registry: CallRegistry,
    outbox: Outbox,
    method: string,
    codecs: MethodCodecs,
    window: number,
  ) {
    super(method, window);
    this.#registry = registry;
    this.#outbox = outbox;
    this.codecs = codecs;
  }

  get id(): number {
    return this.#id;
  }

  get state(): number {
    return this.#state;
  }

  /** The `performance.now()` deadline, `Infinity` for none. */
  get deadline(): number {
    return this.#deadline;
  }

  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /** Whether a stream item arrived. */
  get streaming(): boolean {
    return this.#streaming;
  }

  // ---- transitions the registry asks for ----

  /**
   * Takes the param and options before the call is queued or sent; `waits` when it will wait
   * for a slot. Returns false when the call failed at once (it is then done).
   */
  prepare(
    param: unknown,
    options: CallOptions | undefined,
    timeout: number,
    waits: boolean,
  ): boolean {
    if (options?.key !== undefined || options?.attempt !== undefined) {
      try {
        callMetaBody({ key: options.key, attempt: options.attempt });
      } catch (error) {
        this.reject(error);
        return false;
      }
    }
    this.#options = options;
    if (isAsyncIterable(param)) {
      if (this.#outbox.streams === undefined) {
        this.reject(
          new TypeError(
            `This wire has no streams: a call cannot take a stream as its param (method "${this.method}")`,
          ),
        );
        return false;
      }
      this.#streamParam = true;
    } else {
      try {
        this.#body = this.#outbox.callParam(
          this.method,
          this.codecs.param,
          param,
          waits,
          options?.onProgress !== undefined,
        );
      } catch (error) {
        this.reject(
          codecFailure(error, `The param of the call to "${this.method}" cannot be sent`),
        );
        return false;
      }
    }
    this.#param = param;
    if (!(timeout > 0)) {
      // The options checker words the RangeError, as for every other option.
      try {
        positiveOption("timeout", timeout);
      } catch (error) {
        this.reject(error);
      }
      return false;
    }
    if (timeout !== Infinity) {
      this.#timeoutMs = timeout;
      this.#deadline = performance.now() + timeout;
    }
    const signal = options?.signal;
    if (signal !== undefined) {
      if (signal.aborted) {
        this.reject(signal.reason);
        return false;
      }
      this.#signal = signal;
      signal.addEventListener("abort", this);
    }
    return true;
  }

  /** Fails the call before it reached the wire, or as the connection goes. */
  reject(error: unknown): void {
    this.#state = DONE;
    this.#signal?.removeEventListener("abort", this);
    this.#pump?.stop();
    this.fail(error, true);
  }

  /** Sends the call as `id`; `fresh` when it goes out as it is made (its whole timeout left). */
  send(id: number, fresh: boolean): void {
    this.#id = id;
    this.#state = SENT;
    // In flight before it is written: a failing write fails it with the rest.
    this.#registry.sending(this);
    const timeoutMs = this.#deadline === Infinity
      ? 0
      : fresh
      ? Math.ceil(this.#timeoutMs)
      : Math.max(1, Math.ceil(this.#deadline - performance.now()));
    const written = this.#outbox.sendCall(
      id,
      this.method,
      this.#streamParam,
      timeoutMs,
      this.#body,
      this.#param,
      metaOf(this.#options),
    );
    this.#body = EMPTY;
    const source = this.#streamParam ? this.#param as AsyncIterable<unknown> : undefined;
    this.#param = undefined;
    if (written !== undefined) {
      this.#lentWritten = written;
      const clear = (): void => {
        if (this.#lentWritten === written) this.#lentWritten = undefined;
      };
      written.then(clear, clear);
    }
    if (source !== undefined && !this.#registry.closed) {
      const pump = this.#pump = new StreamPump(this, source, this.#registry.peerWindow);
      pump.run();
    }
  }

  /** The terminal frame arrived: the call is over. */
  finish(): void {
    this.#state = DONE;
    this.#signal?.removeEventListener("abort", this);
    this.#pump?.stop();
  }

  /** A progress report arrived: the caller's callback gets it (its errors stay its own). */
  progress(value: unknown): void {
    const onProgress = this.#options?.onProgress;
    if (this.#state !== SENT || onProgress === undefined) return;
    try {
      onProgress(value);
    } catch (error) {
      console.error(`conduit: the onProgress callback of "${this.method}" threw:`, error);
    }
  }

  /** A stream item arrived (a single result may no longer follow). */
  markStreaming(): void {
    this.#streaming = true;
  }

  /** Credit for the param stream arrived. */
  paramCredit(bytes: number): void {
    this.#pump?.credit(bytes);
  }

  /** The handler stopped reading the param stream. */
  stopParam(): void {
    this.#pump?.stop();
  }

  /**
   * Cancels the call: drops it from the queue, or tells the peer and (when the peer answers
   * cancelled calls) waits for its terminal frame to free the id. `code` is
   * `deadline_exceeded` for a passed deadline.
   */
  abortCall(error: unknown, reason: string, code?: string): void {
    if (this.#state === QUEUED) {
      this.#state = DONE;
      this.#registry.unqueued(this);
      this.#signal?.removeEventListener("abort", this);
      this.fail(error, true);
      return;
    }
    if (this.#state !== SENT) return;
    // Keep the id until the handler's terminal frame arrives, so the frames already on their
    // way are recognised and dropped.
    this.#state = CANCELLED;
    this.#deadline = Infinity;
    this.#signal?.removeEventListener("abort", this);
    this.#pump?.stop();
    if (this.#lentWritten !== undefined) {
      // The param is the caller's bytes, still being sent: settling now would let the caller
      // change them under the peer's feet.
      const fail = (): void => this.fail(error, true);
      this.#outbox.flush().then(fail, fail);
    } else {
      this.fail(error, true);
    }
    this.#outbox.sendCancel(this.#id, reason, code);
    if (!this.#registry.answersCancelled) this.#registry.finished(this);
  }

  // ---- CallResult ----

  cancelCall(error: unknown, reason: string): void {
    this.abortCall(error, reason);
  }

  protected expectedOneValue(error: unknown): void {
    if (this.#state === SENT) this.abortCall(error, "the caller expected one value");
  }

  // ---- the abort signal ----

  handleEvent(): void {
    const reason = this.#signal?.reason;
    this.abortCall(reason, reasonText(reason) ?? "aborted by the caller");
  }

  // ---- InboxOwner: the result stream ----

  grantCredit(bytes: number): void {
    if (this.#state === SENT) this.#outbox.streams!.sendResultCredit(this.#id, bytes);
  }

  abandonStream(): void {
    this.abortCall(
      new ConduitError(`The stream of "${this.method}" was cancelled`),
      "the caller stopped reading the stream",
    );
  }

  // ---- PumpOwner: the param stream ----

  sendItem(value: unknown): number {
    if (this.#state !== SENT) return 0;
    try {
      return this.#outbox.streams!.sendParamItem(this.#id, this.codecs.param, value);
    } catch (error) {
      throw codecFailure(
        error,
        `An item of the param stream of the call to "${this.method}" cannot be sent`,
      );
    }
  }

  sendEnd(): void {
    if (this.#state === SENT) this.#outbox.streams!.sendParamEnd(this.#id);
  }

  sendFailure(error: unknown): void {
    if (this.#state === SENT) this.#outbox.streams!.sendParamError(this.#id, error);
  }

  writable(): Promise<void> | undefined {
    return this.#outbox.writable();
  }
}

/** Whether `value` is a stream (a param or a handler's result). */
export function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === "object" && value !== null && Symbol.asyncIterator in value;
}

/** The call's meta from its options, when it has any. */
function metaOf(options: CallOptions | undefined): CallMeta | undefined {
  if (options === undefined) return undefined;
  const { key, attempt } = options;
  return key === undefined && attempt === undefined ? undefined : { key, attempt };
}
