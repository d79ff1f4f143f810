// The handler's side of one call: the CallContext the handler receives, and the owner of the
// call's param stream (consumed) and result stream (produced).

import type { MethodCodecs } from "./_codecs.ts";
import type { InboxOwner, PumpOwner, StreamInbox, StreamPump } from "./_stream.ts";
import type { Channel } from "./channel.ts";
import type { CallContext } from "./types.ts";

/** What an incoming call needs from the channel core. */
export interface IncomingHost {
  /** The public channel, for `ctx.channel`. */
  readonly channel: Channel<Record<string, never>>;
  /** Sends CREDIT(R=1) for the call's param stream. */
  sendParamCredit(call: IncomingCall, bytes: number): void;
  /** Sends CANCEL(R=1): the handler stopped reading the param stream. */
  cancelParamStream(call: IncomingCall): void;
  /** Sends one result stream item as DATA(R=1); returns its cost. */
  sendResultItem(call: IncomingCall, value: unknown): number;
  /** Sends END(R=1), the call's terminal frame. */
  sendResultEnd(call: IncomingCall): void;
  /** Sends ERROR(R=1), the call's terminal frame. */
  sendResultFailure(call: IncomingCall, error: unknown): void;
  /** The transport's backpressure, as for {@linkcode PumpOwner.writable}. */
  writable(): Promise<void> | undefined;
}

/** One call the peer started, being served here. */
export class IncomingCall implements CallContext<Record<string, never>>, InboxOwner, PumpOwner {
  readonly id: number;
  readonly method: string;
  readonly codecs: MethodCodecs;
  readonly #host: IncomingHost;
  /** `performance.now()` deadline, `Infinity` for none. */
  deadlineAt = Infinity;
  timeoutMs = 0;
  /** Whether the terminal frame was sent (or the connection is gone). */
  done = false;
  /** Whether CANCEL(R=1) was sent: later param stream frames may cross it, and are dropped. */
  paramCancelled = false;
  inbox: StreamInbox<unknown> | undefined;
  pump: StreamPump | undefined;
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  constructor(host: IncomingHost, id: number, method: string, codecs: MethodCodecs) {
    this.#host = host;
    this.id = id;
    this.method = method;
    this.codecs = codecs;
  }

  get deadline(): number | undefined {
    return this.deadlineAt === Infinity
      ? undefined
      : Math.round(performance.timeOrigin + this.deadlineAt);
  }

  get channel(): Channel<Record<string, never>> {
    return this.#host.channel;
  }

  // Created on first use: most handlers never look at their signal.
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Fires the handler's signal. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }

  grantCredit(bytes: number): void {
    this.#host.sendParamCredit(this, bytes);
  }

  abandonStream(): void {
    this.#host.cancelParamStream(this);
  }

  sendItem(value: unknown): number {
    return this.#host.sendResultItem(this, value);
  }

  sendEnd(): void {
    this.#host.sendResultEnd(this);
  }

  sendFailure(error: unknown): void {
    this.#host.sendResultFailure(this, error);
  }

  writable(): Promise<void> | undefined {
    return this.#host.writable();
  }
}

/** The context of a notification handler: no deadline, and a signal that fires on close. */
export class NotificationContext implements CallContext<Record<string, never>> {
  readonly method: string;
  readonly channel: Channel<Record<string, never>>;
  readonly signal: AbortSignal;
  readonly deadline: undefined;

  constructor(channel: Channel<Record<string, never>>, method: string, signal: AbortSignal) {
    this.channel = channel;
    this.method = method;
    this.signal = signal;
  }
}
