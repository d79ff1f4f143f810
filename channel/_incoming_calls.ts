// The calls and notifications the peer starts: finding their handler, decoding their param,
// running the handler and routing what the wire reports about them (param stream items,
// credit for result streams, cancels). Each call owns its state (IncomingCall,
// _call_context.ts): the context the handler receives, and the owner of its streams.

import { type CallMeta, ProtocolError } from "../protocol/format.ts";
import type { MethodCodecs } from "../wires/codec_slots.ts";
import { CallTable, type DeadlineTimer, type LifecycleView } from "./_outgoing_calls.ts";
import type { StreamInbox } from "./_remote.ts";
import type { IncomingEvents, Wire } from "../wires/types.ts";
import { CallCancelledError, ConnectionClosedError, DeadlineExceededError } from "./errors.ts";
import type { IncomingCallInfo, Interceptor } from "./types.ts";
import { IncomingCall, NotificationContext, type ServedCalls } from "./_call_context.ts";
import { Fifo } from "../_fifo.ts";
import { printable } from "../_utf8.ts";
import { ConduitError } from "../errors.ts";

type Handler = (this: unknown, param: unknown, ctx: unknown) => unknown;

/** A CALL held back while the peer is over its limit: served once a slot frees. */
interface HeldCall {
  readonly notification?: false;
  readonly id: number;
  readonly method: string;
  readonly body: unknown;
  readonly timeoutMs: number;
  readonly streamParam: boolean;
  readonly receivedAt: number;
  readonly meta: CallMeta | undefined;
  /** Cancelled by the peer while it waited: answered already, never served. */
  cancelled?: boolean;
}

/** How many methods' handlers are remembered (more are looked up at each call). */
const MAX_CACHED_HANDLERS = 1024;
/**
 * The longest method name whose handler is remembered: conduit's protocol caps names at 1,024
 * bytes, JSON-RPC's only at the frame size, and a catch-all serves any name.
 */
const MAX_CACHED_NAME = 1024;

/** A NOTIFY held back until a notification handler finishes. */
interface HeldNotification {
  readonly notification: true;
  readonly method: string;
  readonly body: unknown;
}

/**
 * How many bytes the read loop reads on after a call was held, on a wire without streams:
 * JSON-RPC peers know nothing of `maxInFlight`, and what comes after the calls held (the answer
 * a running handler waits for, a cancel of a held call) must not wait behind them.
 */
const READ_AHEAD_BYTES = 1 << 20;

/**
 * The calls and notifications held back, in order, and the held calls by id (to cancel): a
 * call leaves the index as it leaves the queue (a queue cleared is a channel gone).
 */
class HeldQueue extends Fifo<HeldCall | HeldNotification> {
  readonly #calls = new Map<number, HeldCall>();
  /** `bytesReceived` when the first of those held now was read; -1 while none is. */
  since = -1;
  /** The loop serving them, while it runs (see IncomingCalls.heldUntil). */
  serving: Promise<void> | undefined;

  override push(held: HeldCall | HeldNotification): void {
    if (!held.notification) this.#calls.set(held.id, held);
    super.push(held);
  }

  override shift(): HeldCall | HeldNotification | undefined {
    const held = super.shift();
    if (held !== undefined && !held.notification) this.#calls.delete(held.id);
    return held;
  }

  /** Marks held call `id` cancelled (it is skipped when its turn comes); undefined if not held. */
  cancel(id: number): HeldCall | undefined {
    const held = this.#calls.get(id);
    if (held !== undefined) held.cancelled = this.#calls.delete(id);
    return held;
  }
}

/** What the registry needs from the channel. */
export interface IncomingOptions {
  /** The public channel, for `ctx.channel`. */
  readonly channel: object;
  readonly maxInFlight: number;
  readonly ring: number;
  readonly streamWindowBytes: number;
  readonly codecsFor: (method: string) => MethodCodecs;
  /** Reports a notification handler's failure; never throws. */
  readonly onNotificationError: (error: unknown, method: string) => void;
  /** The signal notification handlers get: it fires when the channel closes. */
  readonly closeSignal: () => AbortSignal;
  /** A call finished (activity for the idle timeout; while closing, it may finish the close). */
  readonly onIdle: () => void;
  /** Code around every call served: its `handle` functions run each handler. */
  readonly interceptors: readonly Interceptor[] | undefined;
}

/** Runs `handler` for a call through a chain of interceptors. */
type HandleChain = (
  method: string,
  param: unknown,
  context: IncomingCall,
  handler: Handler,
) => Promise<unknown>;

/** The chain of the `handle` functions of `interceptors`, or undefined when none has one. */
function handleChain(
  interceptors: readonly Interceptor[] | undefined,
  handlers: object | undefined,
): HandleChain | undefined {
  const chain = interceptors?.filter((interceptor) => interceptor.handle !== undefined) ?? [];
  if (chain.length === 0) return undefined;
  return (method, param, context, handler) => {
    let runs = 0;
    // The handler runs while the call is open, and again (an interceptor's retry) only when
    // its param is not the stream the first run read (a copy the interceptor kept will do).
    const serve = (call: IncomingCallInfo): unknown => {
      if (context.over) {
        throw new ConduitError(`next() of "${method}" after its call was over: not run`);
      }
      if (runs++ > 0 && context.streamsParam && call.param === param) {
        throw new ConduitError(
          `next() of "${method}" again: its param stream was read by the first run`,
        );
      }
      return handler.call(handlers, call.param, context);
    };
    const run = (index: number, call: IncomingCallInfo): Promise<unknown> => {
      try {
        return Promise.resolve(
          index === chain.length
            ? serve(call)
            : chain[index].handle!(call, (next) => run(index + 1, next)),
        );
      } catch (error) {
        return Promise.reject(error);
      }
    };
    return run(0, { method, param, context });
  };
}

/** The calls the peer starts. */
export class IncomingCalls extends CallTable<IncomingCall> implements IncomingEvents, ServedCalls {
  readonly channel: object;
  readonly #options: IncomingOptions;
  /** The methods served: none until {@linkcode serve} (the channel calls it once open). */
  #handlers: object | undefined;
  /** Runs a handler through the interceptors, when any has a `handle`. */
  #intercept: HandleChain | undefined;
  readonly #handlerCache = new Map<string, Handler>();
  readonly #notificationContexts = new Map<string, NotificationContext>();
  #maxPeerId = 0;
  /**
   * Terminal frames queued for the peer and perhaps not written yet: a call counts against
   * `maxInFlight` until its answer has left, so a peer that never reads its answers cannot
   * make this side queue them without bound. Counted down when a flush settles.
   */
  #unwritten = 0;
  /** Of #unwritten, the answers the wire made up itself (see onRefused). */
  #refusals = 0;
  /** #unwritten at which a flush is asked for, to count down what has been written. */
  readonly #countAt: number;
  /** The count in progress: settles once the answers it counted are written. */
  #counting: Promise<void> | undefined;
  /**
   * The calls past the limit, in order, until they can be served; the read loop waits
   * meanwhile. One at most for conduit (it stops after the frame); a JSON-RPC batch is one
   * frame of several calls (up to the wire's batch limit), taken from the front one by one.
   */
  readonly #held = new HeldQueue();
  /**
   * Notification handlers whose promise has not settled: at `maxInFlight` a further NOTIFY is
   * held like a call, so a peer cannot start handlers without bound by notifying faster than
   * they finish.
   */
  #notifying = 0;
  #room: PromiseWithResolvers<void> | undefined;

  constructor(wire: Wire, life: LifecycleView, deadlines: DeadlineTimer, options: IncomingOptions) {
    super(wire, life, deadlines, options.ring);
    this.channel = options.channel;
    this.#options = options;
    this.#countAt = Math.max(1, options.maxInFlight >> 2);
  }

  /**
   * Serves `handlers` from now on. The channel calls it once the handshake (authentication
   * included) succeeded, before the peer's first call is read.
   */
  serve(handlers: object | undefined): void {
    this.#handlers = handlers;
    this.#intercept = handleChain(this.#options.interceptors, handlers);
  }

  finished(call: IncomingCall): void {
    call.finish();
    this.calls.delete(call.id);
    this.#answerQueued();
    this.#room?.resolve();
    this.#options.onIdle();
  }

  onRefused(): void {
    this.#refusals++;
    this.#answerQueued();
  }

  /** An answer was queued: it counts against `maxInFlight` until written (see #unwritten). */
  #answerQueued(): void {
    if (++this.#unwritten >= this.#countAt && this.#counting === undefined) this.#countWritten();
  }

  /** The connection is gone: every handler's signal fires, their streams fail. */
  dropAll(error: unknown): void {
    for (const call of this.calls.values()) call.drop(error);
    this.calls.clear();
    this.#held.clear();
    this.#room?.resolve();
  }

  /**
   * Whether a CALL is held back because the peer has `maxInFlight` calls unanswered (being
   * served, or answered but the answer not yet written), or a NOTIFY because `maxInFlight`
   * notification handlers are still running, or `maxInFlight` answers the wire made up itself
   * are not written yet: see {@linkcode heldUntil}.
   */
  get holding(): boolean {
    return this.#held.length > 0 || this.#refusals >= this.#options.maxInFlight;
  }

  /**
   * While {@linkcode holding}: serves the held calls and notifications, in order, as room
   * frees, and returns what the read loop waits for before it reads on (undefined: read on).
   * It reads on over a wire without streams (no frame but a cancel is about a held call) for
   * `READ_AHEAD_BYTES` after the first was held; when answers the wire made up pile up, only
   * once they are written (a peer that reads nothing stops it there), not once every held call
   * has run: what a running handler waits for may come next.
   */
  heldUntil(): Promise<void> | undefined {
    const held = this.#held;
    // Started on the next microtask, so that `serving` is set before the loop can end.
    const serving = held.serving ??= Promise.resolve().then(() => this.#serveHeld());
    if (this.wire.outbox.streams !== undefined) return serving;
    if (this.#refusals >= this.#options.maxInFlight) return this.#counting ?? this.#countWritten();
    return this.deadlines.bytesReceived - held.since < READ_AHEAD_BYTES ? undefined : serving;
  }

  /**
   * Waits for room below `maxInFlight` (a call or a notification handler finishes, or answers
   * queued are written), then serves the held calls and notifications, in order, each once
   * there is room. Returns at once when the connection is gone.
   */
  async #serveHeld(): Promise<void> {
    const max = this.#options.maxInFlight;
    const queue = this.#held;
    try {
      while (this.#refusals >= max) {
        await (this.#counting ?? this.#countWritten());
        if (this.life.closed) return;
      }
      for (let held = queue.peek(); held !== undefined; held = queue.peek()) {
        if (held.notification) {
          if (this.#notifying < max) {
            queue.shift();
            this.#runNotification(held.method, held.body);
          } else {
            await this.#waitForRoom();
            if (this.life.closed) return;
          }
          continue;
        }
        if (held.cancelled || this.calls.size + this.#unwritten < max) {
          queue.shift();
          if (held.cancelled) continue;
          this.#serve(
            held.id,
            held.method,
            held.body,
            held.timeoutMs,
            held.streamParam,
            held.receivedAt,
            held.meta,
          );
          continue;
        }
        if (this.#unwritten > 0) {
          await (this.#counting ?? this.#countWritten());
          if (this.life.closed) return;
        } else {
          await this.#waitForRoom();
        }
      }
    } finally {
      // In the turn the last one left: a call held after this starts another loop.
      queue.serving = undefined;
      queue.since = -1;
    }
  }

  /**
   * This side is closing: the calls still held are answered as refused, as the wire answers
   * those that come now (nothing starts after close()); held notifications still run.
   */
  refuseHeld(): void {
    const queue = this.#held;
    for (let n = queue.length; n > 0; n--) {
      const held = queue.shift()!;
      if (held.notification) queue.push(held);
      else if (!held.cancelled) {
        this.#refuse(held.id, new ConnectionClosedError("The connection is closing"), "closing");
      }
    }
  }

  /**
   * Answers call `id`, never served, with `error`: an answer the wire made up, in effect, so it
   * stops the read-ahead as theirs do (heldUntil), or a peer that reads nothing could make this
   * side queue answers without bound.
   */
  #refuse(id: number, error: Error, code: string): void {
    this.wire.outbox.sendCallFailure(id, { name: error.name, message: error.message, code });
    this.onRefused();
  }

  /** Resolves when a call or a notification handler finishes, or the connection is gone. */
  async #waitForRoom(): Promise<void> {
    this.#room = Promise.withResolvers();
    await this.#room.promise;
    this.#room = undefined;
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

  onCall(
    id: number,
    method: string,
    body: unknown,
    timeoutMs: number,
    streamParam: boolean,
    meta: CallMeta | undefined,
  ): void {
    const names = this.wire.names;
    if (id <= this.#maxPeerId) {
      throw new ProtocolError(
        `${names.call} id ${id} is not greater than the previous id ${this.#maxPeerId}`,
      );
    }
    this.#maxPeerId = id;
    if (this.life.peerClosing) {
      throw new ProtocolError(
        `${names.call} ${id} ("${printable(method)}") after the peer's ${names.goodbye}`,
      );
    }
    if (
      this.calls.size + this.#unwritten >= this.#options.maxInFlight || this.#held.length > 0
    ) {
      // Beyond what a peer that reads its answers can send: hold it (see heldUntil).
      const receivedAt = this.deadlines.receivedAt;
      this.#hold({ id, method, body, timeoutMs, streamParam, receivedAt, meta });
      return;
    }
    this.#serve(id, method, body, timeoutMs, streamParam, this.deadlines.receivedAt, meta);
  }

  #serve(
    id: number,
    method: string,
    body: unknown,
    timeoutMs: number,
    streamParam: boolean,
    receivedAt: number,
    meta: CallMeta | undefined,
  ): void {
    const outbox = this.wire.outbox;
    const handler = this.#handler(method);
    if (handler === undefined) {
      outbox.sendCallFailure(id, {
        name: "MethodNotFoundError",
        message: `No method named "${method}"`,
        code: "method_not_found",
      });
      this.#answerQueued();
      return;
    }
    const codecs = this.#options.codecsFor(method);
    const call = new IncomingCall(this, outbox, id, method, codecs, meta);
    let param: unknown;
    if (streamParam) {
      param = call.openInbox(this.#options.streamWindowBytes);
    } else {
      try {
        param = this.wire.decode(codecs.param, body);
      } catch (error) {
        outbox.sendCallFailure(id, {
          name: "InvalidParamError",
          message: `The param of "${method}" could not be decoded: ${messageOf(error)}`,
          code: "invalid_param",
        });
        this.#answerQueued();
        return;
      }
    }
    this.calls.add(call);
    if (timeoutMs > 0) {
      call.setDeadline(receivedAt, timeoutMs);
      this.deadlines.arm(call.deadlineAt);
    }
    let result: unknown;
    let thenable: boolean;
    try {
      const intercept = this.#intercept;
      result = intercept === undefined
        ? handler.call(this.#handlers, param, call)
        : intercept(method, param, call, handler);
      // Inside: a result whose `then` cannot be read (a strict proxy) fails this call only.
      thenable = isThenable(result);
    } catch (error) {
      call.sendFailure(error);
      return;
    }
    if (thenable) {
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

  onNotify(method: string, body: unknown): void {
    if (this.life.peerClosing) {
      const names = this.wire.names;
      const shown = printable(method);
      throw new ProtocolError(`${names.notify} ("${shown}") after the peer's ${names.goodbye}`);
    }
    if (this.#notifying >= this.#options.maxInFlight || this.#held.length > 0) {
      // Handlers that have not finished: hold it (see heldUntil).
      this.#hold({ notification: true, method, body });
      return;
    }
    this.#runNotification(method, body);
  }

  #hold(held: HeldCall | HeldNotification): void {
    if (this.#held.since < 0) this.#held.since = this.deadlines.bytesReceived;
    this.#held.push(held);
  }

  #runNotification(method: string, body: unknown): void {
    const handler = this.#handler(method);
    if (handler === undefined) return;
    try {
      const param = this.wire.decode(this.#options.codecsFor(method).param, body);
      const result = handler.call(this.#handlers, param, this.#notificationContext(method));
      if (isThenable(result)) {
        this.#notifying++;
        const settled = () => {
          this.#notifying--;
          this.#room?.resolve();
        };
        Promise.resolve(result).then(settled, (error) => {
          settled();
          this.#options.onNotificationError(error, method);
        });
      }
    } catch (error) {
      this.#options.onNotificationError(error, method);
    }
  }

  onParamItem(id: number, body: unknown, cost: number): void {
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

  onParamEnd(id: number): void {
    const what = this.wire.names.paramEnd;
    const call = this.#peerCall(id, what);
    if (call !== undefined) this.#openInbox(call, what)?.end();
  }

  onParamError(id: number, body: unknown): void {
    const what = this.wire.names.paramError;
    const call = this.#peerCall(id, what);
    if (call === undefined) return;
    const inbox = this.#openInbox(call, what);
    inbox?.fail(this.wire.decodeError(body, undefined), false);
  }

  onResultCredit(id: number, bytes: number): void {
    this.#peerCall(id, this.wire.names.resultCredit)?.resultCredit(bytes);
  }

  onCancel(id: number, reason: string | undefined, deadline: boolean): void {
    const call = this.#peerCall(id, this.wire.names.cancel);
    const held = call === undefined ? this.#held.cancel(id) : undefined;
    const { method, timeoutMs } = call ?? held ?? {};
    if (method === undefined) return;
    // The caller's clock ran out first: report it as the deadline it is.
    const [error, code] = deadline
      ? [new DeadlineExceededError(method, timeoutMs!), "deadline_exceeded"]
      : [new CallCancelledError(method, reason), "cancelled"];
    if (call !== undefined) return call.stop(error, code);
    // Held, never served: answered as a served call that stopped so is (IncomingCall.stop).
    this.#refuse(id, error, code);
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

  /**
   * Asks the outbox when the answers queued so far are written, to count them down then; the
   * promise never rejects (a failed write fails the channel, which drops everything).
   */
  #countWritten(): Promise<void> {
    const counted = this.#unwritten;
    const refused = this.#refusals;
    return this.#counting = this.wire.outbox.flush().then(
      () => {
        this.#unwritten -= counted;
        this.#refusals -= refused;
        this.#counting = undefined;
      },
      () => {
        this.#counting = undefined;
      },
    );
  }

  #creditError(id: number): ProtocolError {
    return new ProtocolError(
      `${this.wire.names.item} beyond the credit of call ${id}'s param stream`,
    );
  }

  #handler(method: string): Handler | undefined {
    const cached = this.#handlerCache.get(method);
    if (cached !== undefined) return cached;
    const handlers = this.#handlers;
    if (handlers === undefined) return undefined;
    const handler = servedMethod(handlers, method);
    // Bounded: a handler object may serve any name the peer sends (a JSON-RPC catch-all).
    if (
      handler !== undefined && this.#handlerCache.size < MAX_CACHED_HANDLERS &&
      method.length <= MAX_CACHED_NAME
    ) {
      this.#handlerCache.set(method, handler);
    }
    return handler;
  }

  /** One context per method, shared by its notifications: it holds nothing per message. */
  #notificationContext(method: string): NotificationContext {
    let ctx = this.#notificationContexts.get(method);
    if (ctx === undefined) {
      ctx = new NotificationContext(this.channel, method, this.#options.closeSignal());
      // Bounded as the handler cache is: a handler object may serve any name the peer sends.
      if (
        this.#notificationContexts.size < MAX_CACHED_HANDLERS && method.length <= MAX_CACHED_NAME
      ) {
        this.#notificationContexts.set(method, ctx);
      }
    }
    return ctx;
  }
}

/**
 * The handler of `method` under the rule ChannelOptions.handlers documents: a function that
 * is an own data property of the handler object, or of its prototype unless that is
 * `Object.prototype` (a class instance's class), and never `constructor` or `__proto__`.
 * Base classes' methods and Object.prototype's never answer; no getter runs.
 */
function servedMethod(handlers: object, method: string): Handler | undefined {
  if (method === "constructor" || method === "__proto__") return undefined;
  let descriptor = Object.getOwnPropertyDescriptor(handlers, method);
  if (descriptor === undefined) {
    const prototype = Object.getPrototypeOf(handlers);
    if (prototype === null || prototype === Object.prototype) return undefined;
    descriptor = Object.getOwnPropertyDescriptor(prototype, method);
  }
  const value = descriptor?.value;
  return typeof value === "function" ? value as Handler : undefined;
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
