// One call the peer started, being served here: the handler's `CallContext`, the owner of the
// call's param stream (consumed) and result stream (produced). Its state changes only here; it
// writes its own frames through the outbox and tells its registry (IncomingCalls,
// _incoming_calls.ts) when it is over. Also the context of a notification's handler.

import type { CallMeta } from "../protocol/format.ts";
import { ConduitError } from "../errors.ts";
import type { MethodCodecs } from "../wires/codec_slots.ts";
import { codecFailure, isAsyncIterable, unsendableFailure } from "./_outgoing_calls.ts";
import { type InboxOwner, type PumpOwner, StreamInbox, StreamPump } from "./_remote.ts";
import type { EngineError, Outbox } from "../wires/types.ts";

/** The headers of a call that came with none. */
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/** What an incoming call asks of the registry that holds it. */
export interface ServedCalls {
  /** The public channel, for `ctx.channel`. */
  readonly channel: object;
  /** The credit the peer grants each stream it receives. */
  readonly peerWindow: number;
  /** The call's terminal frame was written (or the connection is gone). */
  finished(call: IncomingCall): void;
}

/** One call the peer started, being served here (the handler's `CallContext`). */
export class IncomingCall implements InboxOwner, PumpOwner {
  readonly id: number;
  readonly method: string;
  readonly codecs: MethodCodecs;
  readonly #meta: CallMeta | undefined;
  readonly #calls: ServedCalls;
  readonly #outbox: Outbox;
  /** `performance.now()` deadline, `Infinity` for none. */
  #deadlineAt = Infinity;
  #timeoutMs = 0;
  #done = false;
  /** Whether the handler stopped reading its param stream: later items may cross, dropped. */
  #paramCancelled = false;
  #inbox: StreamInbox<unknown> | undefined;
  #pump: StreamPump | undefined;
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  constructor(
    calls: ServedCalls,
    outbox: Outbox,
    id: number,
    method: string,
    codecs: MethodCodecs,
    meta: CallMeta | undefined,
  ) {
    this.#calls = calls;
    this.#outbox = outbox;
    this.id = id;
    this.method = method;
    this.codecs = codecs;
    this.#meta = meta;
  }

  /** Whether the call is over: its terminal frame is written, or the connection is gone. */
  get over(): boolean {
    return this.#done;
  }

  /** Whether the call has a param stream (read once, by one run of its handler). */
  get streamsParam(): boolean {
    return this.#inbox !== undefined;
  }

  get key(): string | undefined {
    return this.#meta?.key;
  }

  get headers(): Readonly<Record<string, string>> {
    return this.#meta?.headers ?? NO_HEADERS;
  }

  get attempt(): number {
    return this.#meta?.attempt ?? 1;
  }

  get deadline(): number | undefined {
    return this.#deadlineAt === Infinity
      ? undefined
      : Math.round(performance.timeOrigin + this.#deadlineAt);
  }

  get channel(): object {
    return this.#calls.channel;
  }

  // Created on first use: most handlers never look at their signal.
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** The `performance.now()` deadline, `Infinity` for none. */
  get deadlineAt(): number {
    return this.#deadlineAt;
  }

  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /** Whether the terminal frame was written (or the connection is gone). */
  get done(): boolean {
    return this.#done;
  }

  /** Whether this side told the caller to stop the param stream. */
  get paramCancelled(): boolean {
    return this.#paramCancelled;
  }

  /** The param stream, when the param is one. */
  get inbox(): StreamInbox<unknown> | undefined {
    return this.#inbox;
  }

  // ---- transitions the registry asks for ----

  /** The param arrives as a stream: the inbox the handler reads. */
  openInbox(window: number): StreamInbox<unknown> {
    return this.#inbox = new StreamInbox<unknown>(this, window);
  }

  /** The call has a deadline `timeoutMs` after `receivedAt`. */
  setDeadline(receivedAt: number, timeoutMs: number): void {
    this.#timeoutMs = timeoutMs;
    this.#deadlineAt = receivedAt + timeoutMs;
  }

  /** The handler returned (or its promise fulfilled) `value`: answer with it. */
  complete(value: unknown): void {
    let stream: boolean;
    try {
      stream = isAsyncIterable(value);
    } catch (error) {
      // A value that refuses the question (a strict proxy): this call fails, not the channel.
      this.sendFailure(error);
      return;
    }
    if (this.#done) {
      // Cancelled or past its deadline before the handler returned: a stream it returns late
      // is stopped unread, so that what it holds (a file, a subscription) is let go.
      if (stream) {
        const source = value as AsyncIterable<unknown>;
        void Promise.resolve().then(() => source[Symbol.asyncIterator]().return?.()).catch(
          () => {},
        );
      }
      return;
    }
    if (stream) {
      if (this.#outbox.streams === undefined) {
        this.#outbox.sendCallFailure(this.id, {
          name: "TypeError",
          message:
            `The handler of "${this.method}" returned a stream, and this wire has no streams`,
          code: "internal",
        });
        this.#calls.finished(this);
        return;
      }
      const pump = this.#pump = new StreamPump(
        this,
        value as AsyncIterable<unknown>,
        this.#calls.peerWindow,
      );
      pump.run();
      return;
    }
    try {
      this.#outbox.sendResult(this.id, this.method, this.codecs.result, value);
    } catch (error) {
      // Read by the caller: this side is its peer.
      this.sendFailure(
        codecFailure(
          error,
          `The peer's handler of "${this.method}" returned a result that cannot be sent`,
        ),
      );
      return;
    }
    this.#calls.finished(this);
  }

  /** Ends the call early (cancelled by the caller, or past its deadline) with `error`. */
  stop(reason: Error, code: string): void {
    this.#abort(reason);
    this.#pump?.stop();
    // A handler reading its param stream sees why it stopped, not a clean end.
    this.#inbox?.fail(reason, true);
    this.#outbox.sendCallFailure(this.id, errorFields(reason, code));
    this.#calls.finished(this);
  }

  /** The call is over: its terminal frame is written. */
  finish(): void {
    this.#done = true;
    const inbox = this.#inbox;
    // A reader still on the param stream (the handler returned before its end) must not take
    // the items that happened to arrive for the whole stream: it reads them, then this error.
    if (inbox !== undefined && !inbox.closed) {
      inbox.fail(
        new ConduitError(`The call to "${this.method}" is over before its param stream ended`),
        false,
      );
    }
  }

  /** The connection is gone: the handler's signal fires, its streams fail. */
  drop(error: unknown): void {
    this.#done = true;
    this.#abort(error);
    this.#pump?.stop();
    this.#inbox?.fail(error, true);
  }

  /** Credit for the result stream arrived. */
  resultCredit(bytes: number): void {
    this.#pump?.credit(bytes);
  }

  // ---- InboxOwner: the param stream ----

  grantCredit(bytes: number): void {
    if (!this.#done) this.#outbox.streams!.sendParamCredit(this.id, bytes);
  }

  abandonStream(): void {
    this.#paramCancelled = true;
    if (!this.#done) this.#outbox.streams!.sendParamCancel(this.id);
  }

  // ---- PumpOwner: the result stream ----

  sendItem(value: unknown): number {
    if (this.#done) return 0;
    try {
      return this.#outbox.streams!.sendResultItem(this.id, this.codecs.result, value);
    } catch (error) {
      throw codecFailure(
        error,
        `The peer's handler of "${this.method}" yielded an item that cannot be sent`,
      );
    }
  }

  sendEnd(): void {
    if (this.#done) return;
    this.#outbox.streams!.sendResultEnd(this.id);
    this.#calls.finished(this);
  }

  sendFailure(error: unknown): void {
    if (this.#done) return;
    try {
      this.#outbox.sendResultError(this.id, error);
    } catch (unsendable) {
      // The handler failed with a value no error body can say: the call still gets its
      // terminal frame, or its caller would wait and its slot stay taken.
      this.#outbox.sendResultError(
        this.id,
        unsendableFailure(`The peer's handler of "${this.method}"`, unsendable),
      );
    }
    this.#calls.finished(this);
  }

  writable(): Promise<void> | undefined {
    return this.#outbox.writable();
  }

  /** Fires the handler's signal. */
  #abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}

/** The context of a notification handler: no deadline, and a signal that fires on close. */
export class NotificationContext {
  readonly method: string;
  readonly channel: object;
  readonly signal: AbortSignal;
  readonly deadline: undefined;
  readonly key: undefined;
  readonly attempt = 1;
  readonly headers: Readonly<Record<string, string>> = NO_HEADERS;

  constructor(channel: object, method: string, signal: AbortSignal) {
    this.channel = channel;
    this.method = method;
    this.signal = signal;
  }
}

function errorFields(reason: Error, code: string): EngineError {
  return { name: reason.name, message: reason.message, code };
}
