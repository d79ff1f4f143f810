// The calls and notifications the peer starts: finding their handler, decoding their param,
// running the handler and routing what the wire reports about them (param stream items,
// credit for result streams, cancels). Each call owns its state (IncomingCall, below): the
// context the handler receives, and the owner of the call's param stream (consumed) and
// result stream (produced); its state changes only there, it writes its own frames through
// the outbox, and tells its registry when it is over.

import { type CallMeta, ProtocolError } from "../protocol/format.ts";
import type { MethodCodecs } from "../wires/codec_slots.ts";
import {
  CallTable,
  codecFailure,
  type DeadlineTimer,
  isAsyncIterable,
  type LifecycleView,
} from "./_outgoing_calls.ts";
import { type InboxOwner, type PumpOwner, StreamInbox, StreamPump } from "./_remote.ts";
import type { EngineError, IncomingEvents, Outbox, Wire } from "../wires/types.ts";
import { CallCancelledError, DeadlineExceededError } from "./errors.ts";
import type { IncomingCallInfo, Interceptor } from "./types.ts";

/** The headers of a call that came with none. */
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

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
}

/** How many methods' handlers are remembered (more are looked up at each call). */
const MAX_CACHED_HANDLERS = 1024;

/** A NOTIFY held back until a notification handler finishes. */
interface HeldNotification {
  readonly notification: true;
  readonly method: string;
  readonly body: unknown;
}

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
  /** Runs a handler through the interceptors, when any has a `handle`. */
  readonly intercept: HandleChain | undefined;
}

/** Runs `handler` for a call through a chain of interceptors. */
export type HandleChain = (
  method: string,
  param: unknown,
  context: IncomingCall,
  handler: Handler,
) => Promise<unknown>;

/** The chain of the `handle` functions of `interceptors`, or undefined when none has one. */
export function handleChain(
  interceptors: readonly Interceptor[] | undefined,
  handlers: object | undefined,
): HandleChain | undefined {
  const chain = interceptors?.filter((interceptor) => interceptor.handle !== undefined) ?? [];
  if (chain.length === 0) return undefined;
  return (method, param, context, handler) => {
    const run = (index: number, call: IncomingCallInfo): Promise<unknown> => {
      try {
        return Promise.resolve(
          index === chain.length
            ? handler.call(handlers, call.param, context)
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
  readonly #handlerCache = new Map<string, Handler>();
  readonly #notificationContexts = new Map<string, NotificationContext>();
  #maxPeerId = 0;
  /**
   * Terminal frames queued for the peer and perhaps not written yet: a call counts against
   * `maxInFlight` until its answer has left, so a peer that never reads its answers cannot
   * make this side queue them without bound. Counted down when a flush settles.
   */
  #unwritten = 0;
  /** #unwritten at which a flush is asked for, to count down what has been written. */
  readonly #countAt: number;
  /** The count in progress: settles once the answers it counted are written. */
  #counting: Promise<void> | undefined;
  /**
   * The calls past the limit, in order, until they can be served; the read loop waits
   * meanwhile. One at most for conduit (it stops after the frame); a JSON-RPC batch is one
   * frame of several calls (up to the wire's batch limit), taken from the front one by one.
   */
  readonly #held = new Fifo<HeldCall | HeldNotification>();
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

  finished(call: IncomingCall): void {
    call.finish();
    this.calls.delete(call.id);
    if (++this.#unwritten >= this.#countAt && this.#counting === undefined) this.#countWritten();
    this.#room?.resolve();
    this.#options.onIdle();
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
   * notification handlers are still running: the read loop stops reading until
   * {@linkcode serveHeld} returns.
   */
  get holding(): boolean {
    return this.#held.length > 0;
  }

  /**
   * Waits for room below `maxInFlight` (a call or a notification handler finishes, or answers
   * queued are written), then serves the held calls and notifications, in order, each once
   * there is room. Returns at once when the
   * connection is gone.
   */
  async serveHeld(): Promise<void> {
    const max = this.#options.maxInFlight;
    for (let held = this.#held.peek(); held !== undefined; held = this.#held.peek()) {
      if (held.notification) {
        if (this.#notifying < max) {
          this.#held.shift();
          this.#runNotification(held.method, held.body);
        } else {
          await this.#waitForRoom();
          if (this.life.closed) return;
        }
        continue;
      }
      if (this.calls.size + this.#unwritten < max) {
        this.#held.shift();
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
        `${names.call} ${id} ("${method}") after the peer's ${names.goodbye}`,
      );
    }
    if (
      this.calls.size + this.#unwritten >= this.#options.maxInFlight || this.#held.length > 0
    ) {
      // Beyond what a peer that reads its answers can send: hold it, and stop reading.
      const receivedAt = this.deadlines.receivedAt;
      this.#held.push({ id, method, body, timeoutMs, streamParam, receivedAt, meta });
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
        return;
      }
    }
    this.calls.add(call);
    if (timeoutMs > 0) {
      call.setDeadline(receivedAt, timeoutMs);
      this.deadlines.arm(call.deadlineAt);
    }
    let result: unknown;
    try {
      const intercept = this.#options.intercept;
      result = intercept === undefined
        ? handler.call(this.#options.handlers, param, call)
        : intercept(method, param, call, handler);
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

  onNotify(method: string, body: unknown): void {
    if (this.life.peerClosing) {
      const names = this.wire.names;
      throw new ProtocolError(`${names.notify} ("${method}") after the peer's ${names.goodbye}`);
    }
    if (this.#notifying >= this.#options.maxInFlight || this.#held.length > 0) {
      // Handlers that have not finished: hold it, and stop reading.
      this.#held.push({ notification: true, method, body });
      return;
    }
    this.#runNotification(method, body);
  }

  #runNotification(method: string, body: unknown): void {
    const handler = this.#handler(method);
    if (handler === undefined) return;
    try {
      const param = this.wire.decode(this.#options.codecsFor(method).param, body);
      const result = handler.call(this.#options.handlers, param, this.#notificationContext(method));
      if (isThenable(result)) {
        this.#notifying++;
        const settled = () => {
          this.#notifying--;
          this.#room?.resolve();
        };
        Promise.resolve(result).then(settled, (error) => {
          settled();
          this.#reportNotificationError(error, method);
        });
      }
    } catch (error) {
      this.#reportNotificationError(error, method);
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

  /**
   * Asks the outbox when the answers queued so far are written, to count them down then; the
   * promise never rejects (a failed write fails the channel, which drops everything).
   */
  #countWritten(): Promise<void> {
    const counted = this.#unwritten;
    return this.#counting = this.wire.outbox.flush().then(
      () => {
        this.#unwritten -= counted;
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
    const handlers = this.#options.handlers;
    if (handlers === undefined) return undefined;
    const handler = servedMethod(handlers, method);
    // Bounded: a handler object may serve any name the peer sends (a JSON-RPC catch-all).
    if (handler !== undefined && this.#handlerCache.size < MAX_CACHED_HANDLERS) {
      this.#handlerCache.set(method, handler);
    }
    return handler;
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

// ---------------------------------------------------------------- one incoming call

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
    if (this.#done) return;
    if (isAsyncIterable(value)) {
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
      const pump = this.#pump = new StreamPump(this, value, this.#calls.peerWindow);
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
    this.#outbox.sendCallFailure(this.id, errorFields(reason, code));
    this.#calls.finished(this);
  }

  /** The call is over: its terminal frame is written. */
  finish(): void {
    this.#done = true;
    this.#inbox?.close();
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
    this.#outbox.sendResultError(this.id, error);
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

// ---------------------------------------------------------------- the queue of held frames

// A first-in, first-out queue on a ring of slots: push, peek and shift are O(1), where an
// array's shift() moves every element left once the array is too large for V8 to trim in
// place (quadratic over a long queue). The ring is allocated on the first push, doubles when
// full and is let go once the queue empties, so an idle queue holds nothing.

/** The ring's first size (a power of two). */
const MIN_SLOTS = 8;

/** A FIFO queue, O(1) per operation. */
export class Fifo<T> {
  #slots: Array<T | undefined> = [];
  #head = 0;
  #length = 0;

  /** How many items are queued. */
  get length(): number {
    return this.#length;
  }

  /** Adds `item` at the back. */
  push(item: T): void {
    if (this.#length === this.#slots.length) this.#grow();
    this.#slots[(this.#head + this.#length) & (this.#slots.length - 1)] = item;
    this.#length++;
  }

  /** The item at the front, left in place; undefined when empty. */
  peek(): T | undefined {
    return this.#length === 0 ? undefined : this.#slots[this.#head];
  }

  /** Takes the item at the front; undefined when empty. */
  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#slots[this.#head];
    if (--this.#length === 0) {
      this.clear();
    } else {
      this.#slots[this.#head] = undefined;
      this.#head = (this.#head + 1) & (this.#slots.length - 1);
    }
    return item;
  }

  /** Empties the queue and lets its ring go. */
  clear(): void {
    this.#slots = [];
    this.#head = 0;
    this.#length = 0;
  }

  /** Doubles the ring, its items moved to the front in order. */
  #grow(): void {
    const old = this.#slots;
    const size = old.length;
    const slots = new Array<T | undefined>(Math.max(MIN_SLOTS, size * 2)).fill(undefined);
    for (let i = 0; i < size; i++) slots[i] = old[(this.#head + i) & (size - 1)];
    this.#slots = slots;
    this.#head = 0;
  }
}
