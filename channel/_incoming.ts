// The calls and notifications the peer starts: finding their handler, decoding their param,
// running the handler and routing what the wire reports about them (param stream items,
// credit for result streams, cancels). Each call owns its state (_incoming_call.ts).

import { ProtocolError } from "../protocol/protocol_error.ts";
import type { MethodCodecs } from "./_codecs.ts";
import type { Deadlines } from "./_deadlines.ts";
import { CallTable } from "./_call_table.ts";
import { IncomingCall, NotificationContext, type ServedCalls } from "./_incoming_call.ts";
import type { Lifecycle } from "./_lifecycle.ts";
import type { StreamInbox } from "./_stream.ts";
import type { IncomingEvents, Wire } from "./_wire.ts";
import { CallCancelledError, DeadlineExceededError } from "./errors.ts";

type Handler = (this: unknown, param: unknown, ctx: unknown) => unknown;

/** What the registry needs from the channel. */
export interface IncomingOptions {
  /** The public channel, for `ctx.channel`. */
  readonly channel: object;
  readonly handlers: object | undefined;
  readonly maxInFlight: number;
  readonly ring: number;
  readonly streamWindowBytes: number;
  readonly codecsFor: (method: string) => MethodCodecs;
  readonly onNotificationError: (error: unknown, method: string) => void;
  /** The signal notification handlers get: it fires when the channel closes. */
  readonly closeSignal: () => AbortSignal;
  /** A call finished (activity for the idle timeout; while closing, it may finish the close). */
  readonly onIdle: () => void;
}

/** The calls the peer starts. */
export class IncomingCalls extends CallTable<IncomingCall> implements IncomingEvents, ServedCalls {
  readonly channel: object;
  readonly #options: IncomingOptions;
  readonly #handlerCache = new Map<string, Handler>();
  readonly #notificationContexts = new Map<string, NotificationContext>();
  #maxPeerId = 0;

  constructor(wire: Wire, life: Lifecycle, deadlines: Deadlines, options: IncomingOptions) {
    super(wire, life, deadlines, options.ring);
    this.channel = options.channel;
    this.#options = options;
  }

  finished(call: IncomingCall): void {
    call.finish();
    this.calls.delete(call.id);
    this.#options.onIdle();
  }

  /** The connection is gone: every handler's signal fires, their streams fail. */
  dropAll(error: unknown): void {
    for (const call of this.calls.values()) call.drop(error);
    this.calls.clear();
  }

  /** Stops the calls whose deadline is at or before `now`; returns the next deadline. */
  expire(now: number): number {
    let next = Infinity;
    for (const call of this.calls.values()) {
      if (call.deadlineAt <= now) {
        call.stop(new DeadlineExceededError(call.method, call.timeoutMs), "deadline_exceeded");
      } else if (call.deadlineAt < next) next = call.deadlineAt;
    }
    return next;
  }

  // ---------------------------------------------------------------- what the wire reports

  call(id: number, method: string, body: unknown, timeoutMs: number, streamParam: boolean): void {
    const names = this.wire.names;
    if (id <= this.#maxPeerId) {
      throw new ProtocolError(
        `${names.call} id ${id} is not greater than the previous id ${this.#maxPeerId}`,
      );
    }
    this.#maxPeerId = id;
    if (this.life.peerClosing) {
      throw new ProtocolError(
        `${names.call} ${id} ("${method}") after the peer's ${names.goodbye}`,
      );
    }
    const outbox = this.wire.outbox;
    if (this.calls.size >= this.#options.maxInFlight) {
      outbox.failCall(id, {
        name: "TooManyCallsError",
        message: `Call ${id} ("${method}") exceeds maxInFlight (${this.#options.maxInFlight})`,
        code: "too_many_calls",
      });
      return;
    }
    const handler = this.#handler(method);
    if (handler === undefined) {
      outbox.failCall(id, {
        name: "MethodNotFoundError",
        message: `No method named "${method}"`,
        code: "method_not_found",
      });
      return;
    }
    const codecs = this.#options.codecsFor(method);
    const call = new IncomingCall(this, outbox, id, method, codecs);
    let param: unknown;
    if (streamParam) {
      param = call.openInbox(this.#options.streamWindowBytes);
    } else {
      try {
        param = this.wire.decode(codecs.param, body);
      } catch (error) {
        outbox.failCall(id, {
          name: "InvalidParamError",
          message: `The param of "${method}" could not be decoded: ${messageOf(error)}`,
          code: "invalid_param",
        });
        return;
      }
    }
    this.calls.add(call);
    if (timeoutMs > 0) {
      call.setDeadline(this.deadlines.receivedAt, timeoutMs);
      this.deadlines.arm(call.deadlineAt);
    }
    let result: unknown;
    try {
      result = handler.call(this.#options.handlers, param, call);
    } catch (error) {
      call.sendFailure(error);
      return;
    }
    if (isThenable(result)) {
      // Promise.resolve returns a native promise as is, and turns a thenable whose `then`
      // throws into a rejection instead of an exception in the dispatch loop.
      Promise.resolve(result).then(
        (value) => call.complete(value),
        (error) => call.sendFailure(error),
      );
    } else {
      call.complete(result);
    }
  }

  notify(method: string, body: unknown): void {
    if (this.life.peerClosing) {
      const names = this.wire.names;
      throw new ProtocolError(`${names.notify} ("${method}") after the peer's ${names.goodbye}`);
    }
    const handler = this.#handler(method);
    if (handler === undefined) return;
    try {
      const param = this.wire.decode(this.#options.codecsFor(method).param, body);
      const result = handler.call(this.#options.handlers, param, this.#notificationContext(method));
      if (isThenable(result)) {
        Promise.resolve(result).catch((error) => this.#reportNotificationError(error, method));
      }
    } catch (error) {
      this.#reportNotificationError(error, method);
    }
  }

  paramItem(id: number, body: unknown, cost: number): void {
    const names = this.wire.names;
    const call = this.#peerCall(id, names.paramItem);
    if (call === undefined) return;
    const inbox = this.#openInbox(call, names.paramItem);
    if (inbox === undefined) return;
    let item: unknown;
    try {
      item = this.wire.decode(call.codecs.param, body);
    } catch (error) {
      if (!inbox.charge(cost)) throw this.#creditError(id);
      inbox.fail(invalidParamItem(call.method, error), false);
      call.abandonStream();
      return;
    }
    if (!inbox.push(item, cost)) throw this.#creditError(id);
  }

  paramEnd(id: number): void {
    const what = this.wire.names.paramEnd;
    const call = this.#peerCall(id, what);
    if (call !== undefined) this.#openInbox(call, what)?.end();
  }

  paramError(id: number, body: unknown): void {
    const what = this.wire.names.paramError;
    const call = this.#peerCall(id, what);
    if (call === undefined) return;
    const inbox = this.#openInbox(call, what);
    inbox?.fail(this.wire.decodeError(body, undefined), false);
  }

  resultCredit(id: number, bytes: number): void {
    this.#peerCall(id, this.wire.names.resultCredit)?.resultCredit(bytes);
  }

  cancel(id: number, reason: string | undefined, deadline: boolean): void {
    const call = this.#peerCall(id, this.wire.names.cancel);
    if (call === undefined) return;
    if (deadline) {
      // The caller's clock ran out first: report it as the deadline it is.
      call.stop(new DeadlineExceededError(call.method, call.timeoutMs), "deadline_exceeded");
    } else {
      call.stop(new CallCancelledError(call.method, reason), "cancelled");
    }
  }

  // ---------------------------------------------------------------- helpers

  /** The call a frame about a served call is about; undefined when finished (frames may cross). */
  #peerCall(id: number, what: string): IncomingCall | undefined {
    const call = this.calls.get(id);
    if (call === undefined && id > this.#maxPeerId) {
      throw new ProtocolError(`${what} for call ${id}, which the peer never started`);
    }
    return call;
  }

  /** The call's param stream if it still takes items; undefined when the handler left it. */
  #openInbox(call: IncomingCall, what: string): StreamInbox<unknown> | undefined {
    const inbox = call.inbox;
    if (inbox === undefined) {
      throw new ProtocolError(`${what} for call ${call.id}, which has no param stream`);
    }
    if (inbox.abandoned || call.paramCancelled) return undefined;
    if (inbox.closed) {
      throw new ProtocolError(`${what} for call ${call.id} after its param stream ended`);
    }
    return inbox;
  }

  #creditError(id: number): ProtocolError {
    return new ProtocolError(
      `${this.wire.names.item} beyond the credit of call ${id}'s param stream`,
    );
  }

  #handler(method: string): Handler | undefined {
    const cached = this.#handlerCache.get(method);
    if (cached !== undefined) return cached;
    const handlers = this.#options.handlers as Record<string, unknown> | undefined;
    if (handlers === undefined) return undefined;
    // Never expose Object.prototype's members (constructor, toString, __proto__…) as methods.
    if (method in Object.prototype && !Object.hasOwn(handlers, method)) return undefined;
    const value = handlers[method];
    if (typeof value !== "function") return undefined;
    this.#handlerCache.set(method, value as Handler);
    return value as Handler;
  }

  /** One context per method, shared by its notifications: it holds nothing per message. */
  #notificationContext(method: string): NotificationContext {
    let ctx = this.#notificationContexts.get(method);
    if (ctx === undefined) {
      ctx = new NotificationContext(this.channel, method, this.#options.closeSignal());
      // Bounded: only methods that have a handler get here.
      this.#notificationContexts.set(method, ctx);
    }
    return ctx;
  }

  #reportNotificationError(error: unknown, method: string): void {
    try {
      this.#options.onNotificationError(error, method);
    } catch {
      // A failing error reporter must not take the connection down.
    }
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null &&
    typeof (value as { then?: unknown }).then === "function";
}

/** What the handler reads from its param stream when an item does not decode. */
function invalidParamItem(method: string, error: unknown): Error {
  return Object.assign(
    new Error(`A param stream item of "${method}" could not be decoded: ${messageOf(error)}`, {
      cause: error,
    }),
    { name: "InvalidParamError", code: "invalid_param" },
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
