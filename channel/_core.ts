// The protocol engine behind a Channel: handshake, dispatch of incoming frames, calls in both
// directions, streams, deadlines, goodbye and failure. Incoming frames are parsed and
// dispatched synchronously, a whole transport chunk per loop; outgoing frames are queued on a
// FrameWriter, which coalesces the frames of one turn into one transport write.

import type { Codec } from "../codecs/types.ts";
import { FrameTooLargeError, FramingError } from "../errors.ts";
import { FrameDecoder } from "../framing/frame_decoder.ts";
import { FrameReader } from "../framing/frame_reader.ts";
import { FrameWriter } from "../framing/frame_writer.ts";
import type { Transport } from "../transports/types.ts";
import {
  BODY_LENT,
  BODY_OWNED,
  BODY_SCRATCH,
  bodyHolder,
  decodeBody,
  encodeBody,
  type MethodCodecs,
} from "./_codecs.ts";
import { IncomingCall, NotificationContext } from "./_incoming_call.ts";
import {
  CANCELLED,
  DONE,
  OutgoingCall,
  type OutgoingHost,
  QUEUED,
  SENT,
} from "./_outgoing_call.ts";
import { EnvelopeHeads } from "./_envelope_heads.ts";
import { IdTable } from "./_id_table.ts";
import { readVarint, varintEnd } from "./_varint.ts";
import { StreamInbox, StreamPump } from "./_stream.ts";
import type { Channel } from "./channel.ts";
import {
  CALL_FLAG_STREAM_PARAM,
  decodeEnvelope,
  encodeBodyFrame,
  encodeIdFrame,
  type Envelope,
  FRAME_KINDS,
  MAX_METHOD_BYTES,
  R_FLAG,
} from "./envelope.ts";
import { decodeErrorBody, encodeErrorBody, type ErrorClass } from "./error_codec.ts";
import {
  CallCancelledError,
  ConnectionClosedError,
  DeadlineExceededError,
  HandshakeError,
  ProtocolError,
} from "./errors.ts";
import type { CallContext, CallOptions } from "./types.ts";

/** The protocol version this implementation speaks. */
export const PROTOCOL_VERSION = 1;

/** The peer's HELLO: its codec and limits. */
export interface PeerInfo {
  /** The protocol version the peer speaks. */
  readonly version: number;
  /** The peer's channel codec name. */
  readonly codec: string;
  /** The largest frame payload the peer accepts. */
  readonly maxFrameBytes: number;
  /** How many of this side's calls the peer handles at once. */
  readonly maxInFlight: number;
  /** The credit the peer grants to each stream it receives. */
  readonly streamWindowBytes: number;
  /** The extensions the peer understands. */
  readonly features: readonly string[];
}

/** Resolved channel options. */
export interface CoreConfig {
  codec: Codec<unknown>;
  methodCodecs: Map<string, MethodCodecs> | undefined;
  handlers: object | undefined;
  maxInFlight: number;
  maxFrameBytes: number;
  streamWindowBytes: number;
  handshakeTimeout: number;
  defaultTimeout: number;
  drainTimeout: number;
  writeHighWaterMark: number;
  heartbeat: { intervalMs: number; timeoutMs: number } | undefined;
  trustPeer: boolean;
  errorClasses: Map<string, ErrorClass>;
  onNotificationError: (error: unknown, method: string) => void;
}

type Handler = (this: unknown, param: unknown, ctx: CallContext) => unknown;
type Timer = ReturnType<typeof setTimeout>;

const HANDSHAKE = 0;
const OPEN = 1;
const CLOSING = 2;
const CLOSED = 3;

/** HELLO and GOODBYE frames must fit in this many bytes (docs/protocol.md §2). */
const MAX_CONTROL_FRAME_BYTES = 1024;
/** Room kept for the envelope fields when checking a body against the peer's limit. */
const ENVELOPE_SLACK = 32;
/** The most slots of the id rings that hold the calls in flight (more wait in a Map). */
const MAX_ID_RING = 1024;
/** How many incoming method names are matched without decoding them. */
const RECENT_METHODS = 8;
/**
 * Frames of one read dispatched before the answers queued so far start leaving, so the peer
 * works on them while the rest is dispatched instead of both sides taking turns. (The write
 * cannot finish before the read is dispatched, so the rest leaves at the end.)
 */
const EARLY_WRITE_FRAMES = 32;
/** How long a failing channel waits to flush its GOODBYE before dropping the transport. */
const FAILURE_FLUSH_MS = 1000;

const EMPTY = new Uint8Array(0);
const utf8 = new TextEncoder();
const text = new TextDecoder();

const CANCEL_R0 = FRAME_KINDS.cancel;
const CANCEL_R1 = FRAME_KINDS.cancel | R_FLAG;
const CREDIT_R0 = FRAME_KINDS.credit;
const CREDIT_R1 = FRAME_KINDS.credit | R_FLAG;
const DATA_R0 = FRAME_KINDS.data;
const DATA_R1 = FRAME_KINDS.data | R_FLAG;
const END_R0 = FRAME_KINDS.end;
const END_R1 = FRAME_KINDS.end | R_FLAG;
const ERROR_R0 = FRAME_KINDS.error;
const ERROR_R1 = FRAME_KINDS.error | R_FLAG;
const RESULT_R1 = FRAME_KINDS.result | R_FLAG;

/** The channel's protocol engine (one per connection). */
export class ChannelCore implements OutgoingHost {
  readonly channel: Channel<Record<string, never>>;
  /** Settles when the handshake succeeds or fails. */
  readonly opened: Promise<void>;
  /** Resolves after a graceful close, rejects with ConnectionClosedError otherwise. */
  readonly closed: Promise<void>;
  peer: PeerInfo | undefined;
  state = HANDSHAKE;

  readonly #config: CoreConfig;
  readonly #transport: Transport;
  readonly #writer: FrameWriter;
  readonly #heads = new EnvelopeHeads();
  readonly #decoder: FrameDecoder;
  readonly #defaultCodecs: MethodCodecs;
  readonly #openedResolvers = Promise.withResolvers<void>();
  readonly #closedResolvers = Promise.withResolvers<void>();
  readonly #reading: Promise<void>;
  #reader: FrameReader | undefined;

  readonly #calls: IdTable<OutgoingCall>;
  /** Calls whose param is the caller's own bytes, until the FrameWriter has written them. */
  readonly #lentCalls = new Set<OutgoingCall>();
  /** Settles once the stream items of the producers' own bytes queued so far are written. */
  #lentItemsWritten: Promise<void> | undefined;
  #queue: OutgoingCall[] = [];
  #queueHead = 0;
  #queued = 0;
  #nextId = 1;
  #callLimit = 1;
  #peerMaxFrame = MAX_CONTROL_FRAME_BYTES;
  #peerWindow = 1;

  readonly #incoming: IdTable<IncomingCall>;
  #maxPeerId = 0;
  readonly #handlerCache = new Map<string, Handler>();
  readonly #notificationContexts = new Map<string, NotificationContext>();
  readonly #methodBytes = new Map<string, Uint8Array>();
  /** The method names of recent incoming frames, to match their bytes without decoding. */
  readonly #recentMethods: Array<{ bytes: Uint8Array; name: string }> = [];
  #nextRecent = 0;
  #afterMethod = 0;

  #deadlineTimer: Timer | undefined;
  #deadlineAt = Infinity;
  #handshakeTimer: Timer | undefined;
  #drainTimer: Timer | undefined;
  #heartbeatTimer: Timer | undefined;
  #receivedAt = 0;
  #pingNonce = 0;
  #sentGoodbye = false;
  #peerGoodbye: { code?: string; reason?: string } | undefined;
  #closeController: AbortController | undefined;
  #shutdown: Promise<void> | undefined;
  /** Resolved when the channel stops being open, to end the waits of `ready()`. */
  #leftOpen: PromiseWithResolvers<void> | undefined;
  /** What the channel failed with (undefined while open, and after a graceful close). */
  #failure: ConnectionClosedError | undefined;

  constructor(
    channel: Channel<Record<string, never>>,
    transport: Transport,
    config: CoreConfig,
    defaultCodecs: MethodCodecs,
  ) {
    this.channel = channel;
    this.#transport = transport;
    this.#config = config;
    this.#defaultCodecs = defaultCodecs;
    const ring = Math.min(config.maxInFlight, MAX_ID_RING);
    this.#calls = new IdTable(ring);
    this.#incoming = new IdTable(ring);
    this.opened = this.#openedResolvers.promise;
    this.closed = this.#closedResolvers.promise;
    // Both are reported through the public API; keep them from surfacing as unhandled.
    this.opened.catch(() => {});
    this.closed.catch(() => {});
    const hello = utf8.encode(JSON.stringify({
      protocol: "conduit",
      version: PROTOCOL_VERSION,
      codec: config.codec.name,
      maxFrameBytes: config.maxFrameBytes,
      maxInFlight: config.maxInFlight,
      streamWindowBytes: config.streamWindowBytes,
      features: [],
    }));
    if (hello.length >= MAX_CONTROL_FRAME_BYTES) {
      // Checked before the transport is touched: nothing to release.
      throw new RangeError(
        `The HELLO would be ${hello.length + 1} bytes, over ${MAX_CONTROL_FRAME_BYTES}: ` +
          `the codec name is too long (${JSON.stringify(config.codec.name.slice(0, 40))}…)`,
      );
    }
    this.#decoder = new FrameDecoder({ maxFrameBytes: config.maxFrameBytes });
    this.#writer = new FrameWriter(transport.writable, {
      maxFrameBytes: 0xffff_ffff,
      highWaterMark: config.writeHighWaterMark,
      // A failed write (the peer stopped reading, the socket broke) fails the channel now:
      // otherwise it would be noticed only at the next write or when reads end, and pending
      // calls would wait for their deadlines.
      onFailure: (error) =>
        this.#fail(new ConnectionClosedError("Writing to the transport failed", { cause: error })),
    });
    this.#write(encodeBodyFrame(FRAME_KINDS.hello, hello));
    this.#handshakeTimer = setTimeout(() => {
      this.#handshakeTimer = undefined;
      this.#failHandshake(
        "handshake_timeout",
        `No HELLO from the peer within handshakeTimeout (${config.handshakeTimeout} ms)`,
      );
    }, config.handshakeTimeout);
    this.#reading = this.#readLoop();
  }

  // ---------------------------------------------------------------- calls this side starts

  /** Starts a call; the returned object is both the promise and the stream of its result. */
  call(method: string, param: unknown, options: CallOptions | undefined): OutgoingCall {
    const codecs = this.#codecsFor(method);
    const call = new OutgoingCall(this, method, codecs, this.#config.streamWindowBytes);
    if (this.state !== OPEN) {
      call.state = DONE;
      call.fail(this.#notOpenError(), true);
      return call;
    }
    let lent = false;
    if (isAsyncIterable(param)) {
      call.flags = CALL_FLAG_STREAM_PARAM;
      call.source = param;
    } else {
      try {
        call.body = encodeBody(codecs.param, param);
      } catch (error) {
        call.state = DONE;
        call.fail(error, true);
        return call;
      }
      const size = call.body.length + method.length * 3 + ENVELOPE_SLACK;
      if (size > this.#peerMaxFrame) {
        call.state = DONE;
        call.fail(new FrameTooLargeError(size, this.#peerMaxFrame), true);
        return call;
      }
      // A codec's scratch view is copied if it outlives this call: waiting in the queue, or
      // kept by the FrameWriter (`size` overestimates the frame: at worst a needless copy).
      // The caller's own bytes are not: they must stay unchanged until the call settles.
      const kept = this.#writer.keepsBody(size);
      lent = bodyHolder === BODY_LENT && kept;
      if (
        bodyHolder === BODY_SCRATCH &&
        (kept || this.#queued > 0 || this.#calls.size >= this.#callLimit)
      ) {
        call.body = call.body.slice();
      }
    }
    const timeout = options?.timeout ?? this.#config.defaultTimeout;
    if (!(timeout > 0)) {
      call.state = DONE;
      call.fail(
        new RangeError(`timeout must be a positive number of ms or Infinity, got ${timeout}`),
        true,
      );
      return call;
    }
    if (timeout !== Infinity) {
      call.timeoutMs = timeout;
      call.deadline = performance.now() + timeout;
      this.#armDeadline(call.deadline);
    }
    const signal = options?.signal;
    if (signal !== undefined) {
      if (signal.aborted) {
        call.state = DONE;
        call.fail(signal.reason, true);
        return call;
      }
      call.signal = signal;
      signal.addEventListener("abort", call);
    }
    if (lent) this.#lentCalls.add(call);
    if (this.#queued === 0 && this.#calls.size < this.#callLimit) this.#send(call, true);
    else {
      this.#queue.push(call);
      this.#queued++;
    }
    return call;
  }

  /** Sends a notification. */
  notify(method: string, param: unknown): void {
    if (this.state !== OPEN) throw this.#notOpenError();
    if (isAsyncIterable(param)) {
      throw new TypeError(`A notification cannot carry a stream (method "${method}")`);
    }
    const body = encodeBody(this.#codecsFor(method).param, param);
    const head = this.#heads.notify(this.#methodName(method));
    const size = head.length + body.length;
    if (size > this.#peerMaxFrame) throw new FrameTooLargeError(size, this.#peerMaxFrame);
    this.#writeBody(head, body);
  }

  /** The FrameWriter's room below its high-water mark while open, else 0. */
  get desiredSize(): number {
    return this.state === OPEN ? this.#writer.desiredSize : 0;
  }

  /**
   * Resolves once the outgoing queue is below its high-water mark; rejects with a
   * ConnectionClosedError, like `notify`, once the channel is no longer open.
   */
  ready(): Promise<void> {
    if (this.state === OPEN) {
      return this.#writer.desiredSize > 0 ? Promise.resolve() : this.#readyWhileOpen();
    }
    if (this.state === HANDSHAKE) {
      return this.opened.then(() => this.ready(), () => Promise.reject(this.#notOpenError()));
    }
    return Promise.reject(this.#notOpenError());
  }

  // A writer whose queue drains after close() started would resolve, yet notify would throw:
  // the wait ends as soon as the channel leaves OPEN, whichever comes first.
  #readyWhileOpen(): Promise<void> {
    this.#leftOpen ??= Promise.withResolvers<void>();
    return Promise.race([this.#writer.ready, this.#leftOpen.promise]).then(
      () => {
        if (this.state !== OPEN) throw this.#notOpenError();
      },
      (error) => {
        throw this.state !== OPEN
          ? this.#notOpenError()
          : new ConnectionClosedError("Writing to the transport failed", { cause: error });
      },
    );
  }

  #stopWaitingForReady(): void {
    this.#leftOpen?.resolve();
    this.#leftOpen = undefined;
  }

  /** Sends CALL; `fresh` when it goes out as it is made, so its whole timeout remains. */
  #send(call: OutgoingCall, fresh: boolean): void {
    const id = this.#nextId++;
    call.id = id;
    call.state = SENT;
    const timeoutMs = call.deadline === Infinity
      ? 0
      : fresh
      ? Math.ceil(call.timeoutMs)
      : Math.max(1, Math.ceil(call.deadline - performance.now()));
    this.#calls.add(call);
    const method = this.#methodName(call.method);
    this.#writeParts(this.#heads.call(id, call.flags, timeoutMs, method), call.body);
    call.body = EMPTY;
    if (this.#lentCalls.size > 0 && this.#lentCalls.has(call)) {
      const written = (): boolean => this.#lentCalls.delete(call);
      this.#writer.flush().then(written, written);
    }
    if (call.source !== undefined && this.state !== CLOSED) {
      const pump = call.pump = new StreamPump(call, call.source, this.#peerWindow);
      call.source = undefined;
      pump.run();
    }
  }

  #sendQueued(): void {
    while (this.#queued > 0 && this.#calls.size < this.#callLimit && this.state === OPEN) {
      const call = this.#queue[this.#queueHead];
      this.#queue[this.#queueHead++] = undefined as unknown as OutgoingCall;
      if (call.state !== QUEUED) continue;
      this.#queued--;
      this.#send(call, false);
    }
    if (this.#queueHead > 1024 && this.#queueHead * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#queueHead);
      this.#queueHead = 0;
    }
  }

  /** The call got its terminal frame (or the channel dropped it). */
  #finishCall(call: OutgoingCall): void {
    call.state = DONE;
    this.#calls.delete(call.id);
    call.signal?.removeEventListener("abort", call);
    call.pump?.stop();
    if (this.#queued > 0) this.#sendQueued();
    if (this.state === CLOSING) this.#maybeFinishClose();
  }

  cancelCall(call: OutgoingCall, error: unknown, reason: string, code?: string): void {
    if (call.state === QUEUED) {
      call.state = DONE;
      this.#queued--;
      this.#lentCalls.delete(call);
      call.signal?.removeEventListener("abort", call);
      call.fail(error, true);
      return;
    }
    if (call.state !== SENT) return;
    // Keep the id until the handler's terminal frame arrives, so the frames already on their
    // way are recognised and dropped.
    call.state = CANCELLED;
    call.deadline = Infinity;
    call.signal?.removeEventListener("abort", call);
    call.pump?.stop();
    if (this.#lentCalls.has(call)) {
      // The param is the caller's bytes, still being sent: settling now would let the caller
      // change them under the peer's feet.
      const fail = (): void => call.fail(error, true);
      this.#writer.flush().then(fail, fail);
    } else {
      call.fail(error, true);
    }
    this.#write(
      encodeIdFrame(CANCEL_R0, call.id, utf8.encode(JSON.stringify({ reason, code }))),
    );
  }

  sendResultCredit(call: OutgoingCall, bytes: number): void {
    if (call.state === SENT) this.#writeParts(this.#heads.credit(CREDIT_R0, call.id, bytes), EMPTY);
  }

  sendParamItem(call: OutgoingCall, value: unknown): number {
    if (call.state !== SENT) return 0;
    return this.#writeData(DATA_R0, call.id, encodeBody(call.codecs.param, value));
  }

  sendParamEnd(call: OutgoingCall): void {
    if (call.state === SENT) this.#write(encodeIdFrame(END_R0, call.id, EMPTY));
  }

  sendParamFailure(call: OutgoingCall, error: unknown): void {
    if (call.state === SENT) this.#write(encodeIdFrame(ERROR_R0, call.id, this.#errorBody(error)));
  }

  writable(): Promise<void> | undefined {
    if (this.#lentItemsWritten !== undefined) return this.#lentItemsWritten;
    return this.#writer.desiredSize > 0 ? undefined : this.#writer.ready;
  }

  // ---------------------------------------------------------------- calls the peer starts

  sendParamCredit(call: IncomingCall, bytes: number): void {
    if (!call.done) this.#writeParts(this.#heads.credit(CREDIT_R1, call.id, bytes), EMPTY);
  }

  cancelParamStream(call: IncomingCall): void {
    call.paramCancelled = true;
    if (!call.done) this.#write(encodeIdFrame(CANCEL_R1, call.id, EMPTY));
  }

  sendResultItem(call: IncomingCall, value: unknown): number {
    if (call.done) return 0;
    return this.#writeData(DATA_R1, call.id, encodeBody(call.codecs.result, value));
  }

  sendResultEnd(call: IncomingCall): void {
    if (call.done) return;
    this.#write(encodeIdFrame(END_R1, call.id, EMPTY));
    this.#finishIncoming(call);
  }

  sendResultFailure(call: IncomingCall, error: unknown): void {
    if (call.done) return;
    this.#write(encodeIdFrame(ERROR_R1, call.id, this.#errorBody(error)));
    this.#finishIncoming(call);
  }

  #onCall(id: number, flags: number, timeoutMs: number, method: string, body: Uint8Array): void {
    if (id <= this.#maxPeerId) {
      throw new ProtocolError(
        `CALL id ${id} is not greater than the previous id ${this.#maxPeerId}`,
      );
    }
    this.#maxPeerId = id;
    if (this.#peerGoodbye !== undefined) {
      throw new ProtocolError(`CALL ${id} ("${method}") after the peer's GOODBYE`);
    }
    if (this.#incoming.size >= this.#config.maxInFlight) {
      this.#writeError(id, {
        name: "TooManyCallsError",
        message: `Call ${id} ("${method}") exceeds maxInFlight (${this.#config.maxInFlight})`,
        code: "too_many_calls",
      });
      return;
    }
    const handler = this.#handler(method);
    if (handler === undefined) {
      this.#writeError(id, {
        name: "MethodNotFoundError",
        message: `No method named "${method}"`,
        code: "method_not_found",
      });
      return;
    }
    const codecs = this.#codecsFor(method);
    const call = new IncomingCall(this, id, method, codecs);
    let param: unknown;
    if ((flags & CALL_FLAG_STREAM_PARAM) !== 0) {
      param = call.inbox = new StreamInbox<unknown>(call, this.#config.streamWindowBytes);
    } else {
      try {
        param = decodeBody(codecs.param, body);
      } catch (error) {
        this.#writeError(id, {
          name: "InvalidParamError",
          message: `The param of "${method}" could not be decoded: ${messageOf(error)}`,
          code: "invalid_param",
        });
        return;
      }
    }
    this.#incoming.add(call);
    if (timeoutMs > 0) {
      call.timeoutMs = timeoutMs;
      call.deadlineAt = this.#receivedAt + timeoutMs;
      this.#armDeadline(call.deadlineAt);
    }
    let result: unknown;
    try {
      result = handler.call(this.#config.handlers, param, call);
    } catch (error) {
      this.sendResultFailure(call, error);
      return;
    }
    if (isThenable(result)) {
      // Promise.resolve returns a native promise as is, and turns a thenable whose `then`
      // throws into a rejection instead of an exception in the dispatch loop.
      Promise.resolve(result).then(
        (value) => this.#complete(call, value),
        (error) => this.sendResultFailure(call, error),
      );
    } else {
      this.#complete(call, result);
    }
  }

  #complete(call: IncomingCall, value: unknown): void {
    if (call.done) return;
    if (isAsyncIterable(value)) {
      const pump = call.pump = new StreamPump(call, value, this.#peerWindow);
      pump.run();
      return;
    }
    let body: Uint8Array;
    try {
      body = encodeBody(call.codecs.result, value);
    } catch (error) {
      this.sendResultFailure(call, error);
      return;
    }
    const head = this.#heads.id(RESULT_R1, call.id);
    const size = head.length + body.length;
    if (size > this.#peerMaxFrame) {
      this.#writeError(call.id, {
        name: "FrameTooLargeError",
        message: `The result of "${call.method}" (${size} bytes) exceeds the caller's ` +
          `maxFrameBytes (${this.#peerMaxFrame})`,
        code: "frame_too_large",
      });
    } else {
      this.#writeBody(head, body);
    }
    this.#finishIncoming(call);
  }

  #finishIncoming(call: IncomingCall): void {
    call.done = true;
    this.#incoming.delete(call.id);
    call.inbox?.close();
    if (this.state === CLOSING) this.#maybeFinishClose();
  }

  /** Ends an incoming call early: cancelled by the caller, or past its deadline. */
  #abortIncoming(call: IncomingCall, reason: Error, code: string): void {
    call.abort(reason);
    call.pump?.stop();
    this.#writeError(call.id, { name: reason.name, message: reason.message, code });
    this.#finishIncoming(call);
  }

  #handler(method: string): Handler | undefined {
    const cached = this.#handlerCache.get(method);
    if (cached !== undefined) return cached;
    const handlers = this.#config.handlers as Record<string, unknown> | undefined;
    if (handlers === undefined) return undefined;
    // Never expose Object.prototype's members (constructor, toString, __proto__…) as methods.
    if (method in Object.prototype && !Object.hasOwn(handlers, method)) return undefined;
    const value = handlers[method];
    if (typeof value !== "function") return undefined;
    this.#handlerCache.set(method, value as Handler);
    return value as Handler;
  }

  #onNotify(method: string, body: Uint8Array): void {
    if (this.#peerGoodbye !== undefined) {
      throw new ProtocolError(`NOTIFY ("${method}") after the peer's GOODBYE`);
    }
    const handler = this.#handler(method);
    if (handler === undefined) return;

    try {
      const param = decodeBody(this.#codecsFor(method).param, body);
      const result = handler.call(this.#config.handlers, param, this.#notificationContext(method));
      if (isThenable(result)) {
        Promise.resolve(result).catch((error) => this.#reportNotificationError(error, method));
      }
    } catch (error) {
      this.#reportNotificationError(error, method);
    }
  }

  /** One context per method, shared by its notifications: it holds nothing per message. */
  #notificationContext(method: string): NotificationContext {
    let ctx = this.#notificationContexts.get(method);
    if (ctx === undefined) {
      this.#closeController ??= new AbortController();
      ctx = new NotificationContext(this.channel, method, this.#closeController.signal);
      // Bounded: only methods that have a handler get here.
      this.#notificationContexts.set(method, ctx);
    }
    return ctx;
  }

  #reportNotificationError(error: unknown, method: string): void {
    try {
      this.#config.onNotificationError(error, method);
    } catch {
      // A failing error reporter must not take the connection down.
    }
  }

  // ---------------------------------------------------------------- incoming frames

  /** Hands a received item's memory back to the frame decoder (see Channel.recycle). */
  recycle(item: Uint8Array): boolean {
    return this.#decoder.recycle(item);
  }

  async #readLoop(): Promise<void> {
    const decoder = this.#decoder;
    // Reads the rest of a large frame straight into its own buffer when the transport can.
    const reader = this.#reader = new FrameReader(this.#transport, decoder);
    try {
      while (true) {
        const { value, done } = await reader.read();
        if (done) break;
        // One clock read per chunk: the receipt time of every frame in it.
        this.#receivedAt = performance.now();
        decoder.push(value);
        let frame: Uint8Array | undefined;
        let dispatched = 0;
        while ((frame = decoder.next()) !== undefined) {
          this.#onFrame(frame);
          if (this.state === CLOSED) return;
          if (++dispatched === EARLY_WRITE_FRAMES) this.#writer.writeQueued();
        }
      }
      if (this.state === CLOSED) return;
      decoder.end();
      this.#onEnd();
    } catch (error) {
      if (this.state === CLOSED) return;
      if (error instanceof ProtocolError) this.#protocolFailure(error);
      else if (error instanceof FramingError) {
        this.#protocolFailure(new ProtocolError(error.message, { cause: error }));
      } else {
        this.#fail(
          new ConnectionClosedError("The transport failed", { cause: error }),
          undefined,
          false,
        );
      }
    }
  }

  #onFrame(frame: Uint8Array): void {
    if (this.state !== HANDSHAKE && this.#onCommonFrame(frame)) return;
    if (this.state === HANDSHAKE) {
      // Until the peer's HELLO is accepted its limit is the smallest one (docs/protocol.md §2).
      if (frame.length > MAX_CONTROL_FRAME_BYTES) throw controlFrameError(frame.length);
      this.#onHandshakeFrame(decodeEnvelope(frame));
      return;
    }
    const envelope = decodeEnvelope(frame);
    switch (envelope.kind) {
      case "call":
        this.#rememberMethod(envelope.method);
        return this.#onCall(
          envelope.id,
          envelope.flags,
          envelope.timeoutMs,
          envelope.method,
          envelope.body,
        );
      case "result":
        return this.#onResult(envelope.id, envelope.body);
      case "data":
        if (envelope.receiverId) return this.#onResultData(envelope.id, envelope.body, frame);
        return this.#onParamData(envelope.id, envelope.body, frame);
      case "end":
        if (envelope.receiverId) return this.#onResultEnd(envelope.id);
        return this.#onParamEnd(envelope.id);
      case "credit":
        if (envelope.receiverId) return this.#onParamCredit(envelope.id, envelope.bytes);
        return this.#onResultCredit(envelope.id, envelope.bytes);
      case "error":
        if (envelope.receiverId) return this.#onCallError(envelope.id, envelope.body);
        return this.#onParamError(envelope.id, envelope.body);
      case "cancel":
        if (envelope.receiverId) return this.#onParamCancel(envelope.id);
        return this.#onCancel(envelope.id, envelope.body);
      case "notify":
        this.#rememberMethod(envelope.method);
        return this.#onNotify(envelope.method, envelope.body);
      case "ping":
        this.#write(encodeIdFrame(FRAME_KINDS.pong, envelope.nonce, EMPTY));
        return;
      case "pong":
        return;
      case "goodbye":
        return this.#onGoodbye(envelope.body);
      case "hello":
        throw new ProtocolError("A second HELLO");
    }
  }

  /**
   * Dispatches the frames every call and stream is made of, parsing their fields in place
   * instead of building an Envelope. Returns false for anything else or anything unusual
   * (a malformed field, a method name not seen lately): decodeEnvelope then handles the
   * frame, or names what is wrong with it.
   */
  #onCommonFrame(frame: Uint8Array): boolean {
    const type = frame[0];
    switch (type) {
      case RESULT_R1: {
        const id = readVarint(frame, 1);
        if (varintEnd < 0 || id === 0) return false;
        this.#onResult(id, frame.subarray(varintEnd));
        return true;
      }
      case FRAME_KINDS.call: {
        const id = readVarint(frame, 1);
        if (varintEnd < 0 || id === 0) return false;
        // A streamed param (flags 1) is rare: decodeEnvelope checks its empty body.
        if (frame[varintEnd] !== 0) return false;
        const timeoutMs = readVarint(frame, varintEnd + 1);
        if (varintEnd < 0) return false;
        const method = this.#recentMethod(frame, varintEnd);
        if (method === undefined) return false;
        this.#onCall(id, 0, timeoutMs, method, frame.subarray(this.#afterMethod));
        return true;
      }
      case FRAME_KINDS.notify: {
        const method = this.#recentMethod(frame, 1);
        if (method === undefined) return false;
        this.#onNotify(method, frame.subarray(this.#afterMethod));
        return true;
      }
      case DATA_R0:
      case DATA_R1: {
        const id = readVarint(frame, 1);
        if (varintEnd < 0 || id === 0) return false;
        const body = frame.subarray(varintEnd);
        if (type === DATA_R1) this.#onResultData(id, body, frame);
        else this.#onParamData(id, body, frame);
        return true;
      }
      case CREDIT_R0:
      case CREDIT_R1: {
        const id = readVarint(frame, 1);
        if (varintEnd < 0 || id === 0) return false;
        const bytes = readVarint(frame, varintEnd);
        if (varintEnd !== frame.length || bytes === 0) return false;
        if (type === CREDIT_R1) this.#onParamCredit(id, bytes);
        else this.#onResultCredit(id, bytes);
        return true;
      }
      default:
        return false;
    }
  }

  /**
   * The method name whose length varint is at `offset`, if its bytes match a recent one;
   * sets #afterMethod to the offset after the name.
   */
  #recentMethod(frame: Uint8Array, offset: number): string | undefined {
    const length = readVarint(frame, offset);
    const start = varintEnd;
    if (start < 0 || start + length > frame.length) return undefined;
    search: for (const recent of this.#recentMethods) {
      const bytes = recent.bytes;
      if (bytes.length !== length) continue;
      for (let i = 0; i < length; i++) if (frame[start + i] !== bytes[i]) continue search;
      this.#afterMethod = start + length;
      return recent.name;
    }
    return undefined;
  }

  /** Remembers an incoming method name (decoded and checked by decodeEnvelope). */
  #rememberMethod(name: string): void {
    // A recent name gets here too (a CALL with a streamed param always does): adding it again
    // would push the other names out.
    for (const recent of this.#recentMethods) if (recent.name === name) return;
    const recent = { bytes: utf8.encode(name), name };
    if (this.#recentMethods.length < RECENT_METHODS) this.#recentMethods.push(recent);
    else this.#recentMethods[this.#nextRecent++ % RECENT_METHODS] = recent;
  }

  /** The caller-side call a R=1 frame is about; throws for ids never issued or finished. */
  #ownCall(id: number, what: string): OutgoingCall {
    const call = this.#calls.get(id);
    if (call !== undefined) return call;
    throw new ProtocolError(
      id >= this.#nextId
        ? `${what} for call ${id}, which this side never started`
        : `${what} for call ${id}, which has already finished`,
    );
  }

  /** The handler-side call a R=0 frame is about; undefined when finished (frames may cross). */
  #peerCall(id: number, what: string): IncomingCall | undefined {
    const call = this.#incoming.get(id);
    if (call === undefined && id > this.#maxPeerId) {
      throw new ProtocolError(`${what} for call ${id}, which the peer never started`);
    }
    return call;
  }

  #onResult(id: number, body: Uint8Array): void {
    const call = this.#ownCall(id, "RESULT");
    if (call.streaming) throw new ProtocolError(`RESULT for call ${id} after its stream's DATA`);
    if (call.state === SENT) {
      let value: unknown;
      try {
        value = decodeBody(call.codecs.result, body);
      } catch (error) {
        call.fail(error, true);
        this.#finishCall(call);
        return;
      }
      call.settle(value);
    }
    this.#finishCall(call);
  }

  #onCallError(id: number, body: Uint8Array): void {
    const call = this.#ownCall(id, "ERROR(R=1)");
    if (call.state === SENT) {
      const error = decodeErrorBody(body, {
        classes: this.#config.errorClasses,
        method: call.method,
      });
      if ((error as { code?: unknown }).code === "deadline_exceeded" && call.timeoutMs > 0) {
        call.fail(new DeadlineExceededError(call.method, call.timeoutMs), false);
      } else {
        call.fail(error, false);
      }
    }
    this.#finishCall(call);
  }

  #onResultData(id: number, body: Uint8Array, frame: Uint8Array): void {
    const call = this.#ownCall(id, "DATA(R=1)");
    call.streaming = true;
    if (call.state !== SENT) return;
    let item: unknown;
    try {
      item = decodeBody(call.codecs.result, body);
    } catch (error) {
      if (!call.charge(frame.length)) throw creditError(id, "result");
      this.cancelCall(call, error, "a stream item could not be decoded");
      return;
    }
    if (!call.data(item, frame.length)) throw creditError(id, "result");
  }

  #onResultEnd(id: number): void {
    const call = this.#ownCall(id, "END(R=1)");
    if (call.state === SENT) call.end();
    this.#finishCall(call);
  }

  #onParamCredit(id: number, bytes: number): void {
    const call = this.#calls.get(id);
    if (call === undefined && id >= this.#nextId) {
      throw new ProtocolError(`CREDIT(R=1) for call ${id}, which this side never started`);
    }
    call?.pump?.credit(bytes);
  }

  #onParamCancel(id: number): void {
    const call = this.#calls.get(id);
    if (call === undefined && id >= this.#nextId) {
      throw new ProtocolError(`CANCEL(R=1) for call ${id}, which this side never started`);
    }
    call?.pump?.stop();
  }

  #onParamData(id: number, body: Uint8Array, frame: Uint8Array): void {
    const call = this.#peerCall(id, "DATA(R=0)");
    if (call === undefined) return;
    const inbox = paramInbox(call, "DATA(R=0)");
    if (inbox.abandoned || call.paramCancelled) return;
    if (inbox.closed) {
      throw new ProtocolError(`DATA(R=0) for call ${id} after its param stream ended`);
    }
    let item: unknown;
    try {
      item = decodeBody(call.codecs.param, body);
    } catch (error) {
      if (!inbox.charge(frame.length)) throw creditError(id, "param");
      inbox.fail(invalidParamItem(call.method, error), false);
      this.cancelParamStream(call);
      return;
    }
    if (!inbox.push(item, frame.length)) throw creditError(id, "param");
  }

  #onParamEnd(id: number): void {
    const call = this.#peerCall(id, "END(R=0)");
    if (call === undefined) return;
    const inbox = paramInbox(call, "END(R=0)");
    if (inbox.abandoned || call.paramCancelled) return;
    if (inbox.closed) {
      throw new ProtocolError(`END(R=0) for call ${id} after its param stream ended`);
    }
    inbox.end();
  }

  #onParamError(id: number, body: Uint8Array): void {
    const call = this.#peerCall(id, "ERROR(R=0)");
    if (call === undefined) return;
    const inbox = paramInbox(call, "ERROR(R=0)");
    if (inbox.abandoned || call.paramCancelled) return;
    if (inbox.closed) {
      throw new ProtocolError(`ERROR(R=0) for call ${id} after its param stream ended`);
    }
    inbox.fail(decodeErrorBody(body, { classes: this.#config.errorClasses }), false);
  }

  #onResultCredit(id: number, bytes: number): void {
    this.#peerCall(id, "CREDIT(R=0)")?.pump?.credit(bytes);
  }

  #onCancel(id: number, body: Uint8Array): void {
    const call = this.#peerCall(id, "CANCEL(R=0)");
    if (call === undefined) return;
    let reason: string | undefined;
    let code: unknown;
    if (body.length > 0) {
      const parsed = parseJson(body) as { reason?: unknown; code?: unknown } | undefined;
      if (typeof parsed?.reason === "string") reason = parsed.reason;
      code = parsed?.code;
    }
    if (code === "deadline_exceeded") {
      // The caller's clock ran out first: report it as the deadline it is.
      const error = new DeadlineExceededError(call.method, call.timeoutMs);
      this.#abortIncoming(call, error, "deadline_exceeded");
    } else {
      this.#abortIncoming(call, new CallCancelledError(call.method, reason), "cancelled");
    }
  }

  // ---------------------------------------------------------------- handshake

  #onHandshakeFrame(envelope: Envelope): void {
    if (envelope.kind === "goodbye") {
      const goodbye = parseGoodbye(envelope.body);
      this.#failHandshake(
        goodbye.code ?? "closed",
        `The peer refused the handshake${goodbye.code ? ` (${goodbye.code})` : ""}: ${
          goodbye.reason ?? "no reason given"
        }`,
        false,
      );
      return;
    }
    if (envelope.kind !== "hello") {
      throw new ProtocolError(`The first frame was ${envelope.kind.toUpperCase()}, not HELLO`);
    }
    const hello = parseJson(envelope.body) as Record<string, unknown> | undefined;
    const ours = this.#config.codec.name;
    if (typeof hello !== "object" || hello === null || hello.protocol !== "conduit") {
      return this.#failHandshake(
        "protocol_mismatch",
        `The peer does not speak conduit (its HELLO has protocol ${
          JSON.stringify(hello?.protocol)
        })`,
      );
    }
    if (hello.version !== PROTOCOL_VERSION) {
      return this.#failHandshake(
        "version_mismatch",
        `Protocol version mismatch: this side speaks ${PROTOCOL_VERSION}, the peer ${
          JSON.stringify(hello.version)
        }`,
      );
    }
    if (hello.codec !== ours) {
      return this.#failHandshake(
        "codec_mismatch",
        `Codec mismatch: this side speaks "${ours}", the peer ${JSON.stringify(hello.codec)}`,
      );
    }
    const limit = (name: string, min: number): number => {
      const value = hello[name];
      if (
        typeof value !== "number" || !Number.isSafeInteger(value) || value < min
      ) {
        throw new HandshakeError(
          "invalid_hello",
          `The peer's HELLO has ${name} ${JSON.stringify(value)} (must be an integer >= ${min})`,
        );
      }
      return value;
    };
    let peer: PeerInfo;
    try {
      const features = hello.features ?? [];
      if (!Array.isArray(features) || features.some((f) => typeof f !== "string")) {
        throw new HandshakeError("invalid_hello", "The peer's HELLO features are not strings");
      }
      peer = {
        version: PROTOCOL_VERSION,
        codec: ours,
        maxFrameBytes: Math.min(limit("maxFrameBytes", MAX_CONTROL_FRAME_BYTES), 0xffff_ffff),
        maxInFlight: limit("maxInFlight", 1),
        streamWindowBytes: limit("streamWindowBytes", 1),
        features,
      };
    } catch (error) {
      const handshake = error as HandshakeError;
      return this.#failHandshake(handshake.code, handshake.message);
    }
    this.peer = peer;
    this.#peerMaxFrame = peer.maxFrameBytes;
    this.#peerWindow = peer.streamWindowBytes;
    this.#callLimit = Math.min(this.#config.maxInFlight, peer.maxInFlight);
    this.state = OPEN;
    clearTimeout(this.#handshakeTimer);
    this.#handshakeTimer = undefined;
    const heartbeat = this.#config.heartbeat;
    if (heartbeat !== undefined) {
      this.#heartbeatTimer = setInterval(() => this.#beat(), heartbeat.intervalMs);
    }
    this.#openedResolvers.resolve();
  }

  #failHandshake(code: string, message: string, sendGoodbye = true): void {
    if (this.state !== HANDSHAKE) return;
    const error = new HandshakeError(code, message);
    this.#fail(
      new ConnectionClosedError("The handshake failed", { cause: error }),
      sendGoodbye ? { code, reason: message } : undefined,
      sendGoodbye,
      error,
    );
  }

  // ---------------------------------------------------------------- close

  /** Starts a graceful close: GOODBYE, then drain. Resolves once closed. */
  close(): Promise<void> {
    if (this.state === HANDSHAKE) {
      this.#fail(new ConnectionClosedError("The channel was closed during the handshake"));
    } else if (this.state === OPEN) {
      this.#startClosing();
    }
    return this.#settled();
  }

  /** Closes at once: pending calls fail with ConnectionClosedError (cause: `reason`). */
  abort(reason: unknown): Promise<void> {
    this.#fail(
      new ConnectionClosedError("The channel was aborted", { cause: reason }),
      undefined,
      false,
    );
    return this.#settled();
  }

  #settled(): Promise<void> {
    return this.closed.then(() => this.#shutdown, () => this.#shutdown);
  }

  /** Fails every call still waiting in the queue (none of them reached the wire). */
  #failQueued(error: unknown): void {
    for (let i = this.#queueHead; i < this.#queue.length; i++) {
      const call = this.#queue[i];
      if (call.state !== QUEUED) continue;
      call.state = DONE;
      this.#lentCalls.delete(call);
      call.signal?.removeEventListener("abort", call);
      call.fail(error, true);
    }
    this.#queue = [];
    this.#queueHead = 0;
    this.#queued = 0;
  }

  #startClosing(): void {
    this.state = CLOSING;
    this.#stopWaitingForReady();
    this.#sentGoodbye = true;
    this.#write(encodeBodyFrame(FRAME_KINDS.goodbye, EMPTY));
    if (this.#queued > 0) {
      this.#failQueued(new ConnectionClosedError("The channel closed before the call was sent"));
    }
    const drain = this.#config.drainTimeout;
    this.#drainTimer = setTimeout(() => {
      this.#drainTimer = undefined;
      this.#fail(
        new ConnectionClosedError(
          `In-flight calls did not finish within drainTimeout (${drain} ms)`,
        ),
        { code: "aborted", reason: "drain timeout" },
        true,
      );
    }, drain);
    this.#maybeFinishClose();
  }

  #onGoodbye(body: Uint8Array): void {
    if (body.length >= MAX_CONTROL_FRAME_BYTES) throw controlFrameError(body.length + 1);
    const goodbye = parseGoodbye(body);
    this.#peerGoodbye = goodbye;
    if (goodbye.code !== undefined) {
      // The peer is closing because of a failure; nothing pending will complete.
      const cause = goodbye.code === "protocol_error"
        ? new ProtocolError(`The peer reported a protocol error: ${goodbye.reason ?? ""}`)
        : new ConnectionClosedError(
          `The peer closed the connection (${goodbye.code}): ${goodbye.reason ?? ""}`,
        );
      this.#fail(
        new ConnectionClosedError(`The peer closed the connection (${goodbye.code})`, { cause }),
        undefined,
        false,
      );
      return;
    }
    if (this.state === OPEN) this.#startClosing();
    else this.#maybeFinishClose();
  }

  #maybeFinishClose(): void {
    if (
      this.state !== CLOSING || this.#peerGoodbye === undefined || this.#calls.size > 0 ||
      this.#incoming.size > 0
    ) return;
    this.state = CLOSED;
    this.#clearTimers();
    this.#closeController?.abort(new ConnectionClosedError("The channel closed"));
    this.#shutdown = this.#closeTransport(true);
    this.#shutdown.then(() => this.#closedResolvers.resolve());
  }

  #onEnd(): void {
    if (this.state === CLOSING && this.#peerGoodbye !== undefined) {
      this.#maybeFinishClose();
      if ((this.state as number) === CLOSED) return;
    }
    const goodbye = this.#peerGoodbye;
    const message = this.state === HANDSHAKE
      ? "The peer closed the connection during the handshake"
      : goodbye !== undefined
      ? "The peer closed the connection after its GOODBYE with calls still in flight"
      : "The peer closed the connection without a GOODBYE";
    this.#fail(new ConnectionClosedError(message), undefined, false);
  }

  #protocolFailure(error: ProtocolError): void {
    this.#fail(
      new ConnectionClosedError(`Protocol error: ${error.message}`, { cause: error }),
      { code: "protocol_error", reason: error.message },
      true,
    );
  }

  /**
   * Fails everything pending with `error` and closes the transport: after writing `goodbye`
   * when given, flushing when `graceful`.
   */
  #fail(
    error: ConnectionClosedError,
    goodbye?: { code: string; reason: string },
    graceful = false,
    handshakeError?: HandshakeError,
  ): void {
    if (this.state === CLOSED) return;
    const wasHandshake = this.state === HANDSHAKE;
    this.state = CLOSED;
    this.#failure = error;
    this.#stopWaitingForReady();
    this.#clearTimers();
    // Sent even after this side's own GOODBYE (docs/protocol.md §10): a GOODBYE with a code
    // tells the peer why the connection ends.
    if (goodbye !== undefined) {
      this.#sentGoodbye = true;
      this.#write(encodeBodyFrame(FRAME_KINDS.goodbye, goodbyeBody(goodbye)));
    }
    for (const call of this.#calls.values()) {
      call.state = DONE;
      call.signal?.removeEventListener("abort", call);
      call.pump?.stop();
      call.fail(error, true);
    }
    this.#calls.clear();
    this.#failQueued(error);
    for (const call of this.#incoming.values()) {
      call.done = true;
      call.abort(error);
      call.pump?.stop();
      call.inbox?.fail(error, true);
    }
    this.#incoming.clear();
    this.#closeController?.abort(error);
    if (wasHandshake) {
      const cause = error.cause ?? error;
      this.#openedResolvers.reject(
        handshakeError ??
          new HandshakeError(
            cause instanceof ProtocolError ? "protocol_error" : "closed",
            `The handshake failed: ${error.message}`,
            { cause },
          ),
      );
    }
    this.#shutdown = this.#closeTransport(graceful);
    this.#shutdown.then(() => this.#closedResolvers.reject(error));
  }

  async #closeTransport(graceful: boolean): Promise<void> {
    if (graceful) {
      let timer: Timer | undefined;
      const flushed = await Promise.race([
        this.#writer.close().then(() => true, () => false),
        new Promise<boolean>((resolve) => timer = setTimeout(resolve, FAILURE_FLUSH_MS, false)),
      ]);
      clearTimeout(timer);
      if (flushed) await this.#transport.close().catch(() => {});
    }
    await this.#writer.abort().catch(() => {});
    await this.#transport.abort().catch(() => {});
    await this.#reader?.cancel().catch(() => {});
    await this.#reading;
  }

  #clearTimers(): void {
    clearTimeout(this.#handshakeTimer);
    clearTimeout(this.#deadlineTimer);
    clearTimeout(this.#drainTimer);
    clearInterval(this.#heartbeatTimer);
    this.#handshakeTimer = this.#deadlineTimer = this.#drainTimer = undefined;
    this.#heartbeatTimer = undefined;
    this.#deadlineAt = Infinity;
  }

  #beat(): void {
    const heartbeat = this.#config.heartbeat!;
    const silent = performance.now() - this.#receivedAt;
    if (silent > heartbeat.timeoutMs) {
      this.#fail(
        new ConnectionClosedError(
          `No frame from the peer for ${
            Math.round(silent)
          } ms (heartbeat timeout ${heartbeat.timeoutMs} ms)`,
        ),
        { code: "heartbeat_timeout", reason: `silent for ${Math.round(silent)} ms` },
        true,
      );
      return;
    }
    this.#write(encodeIdFrame(FRAME_KINDS.ping, ++this.#pingNonce, EMPTY));
  }

  // ---------------------------------------------------------------- deadlines

  // One timer for the whole channel, armed for the earliest deadline: calls that finish in
  // time cost no timer work, and a firing scans the pending calls once.
  #armDeadline(at: number): void {
    if (at >= this.#deadlineAt) return;
    clearTimeout(this.#deadlineTimer);
    this.#deadlineAt = at;
    this.#deadlineTimer = setTimeout(
      () => this.#onDeadlines(),
      Math.max(0, Math.ceil(at - performance.now())),
    );
  }

  #onDeadlines(): void {
    this.#deadlineTimer = undefined;
    this.#deadlineAt = Infinity;
    if (this.state === CLOSED) return;
    const now = performance.now() + 1;
    let next = Infinity;
    for (const call of this.#calls.values()) {
      if (call.deadline <= now) {
        this.cancelCall(
          call,
          new DeadlineExceededError(call.method, call.timeoutMs),
          "deadline exceeded",
          "deadline_exceeded",
        );
      } else if (call.deadline < next) next = call.deadline;
    }
    for (let i = this.#queueHead; i < this.#queue.length; i++) {
      const call = this.#queue[i];
      if (call.state !== QUEUED) continue;
      if (call.deadline <= now) {
        this.cancelCall(call, new DeadlineExceededError(call.method, call.timeoutMs), "");
      } else if (call.deadline < next) next = call.deadline;
    }
    for (const call of this.#incoming.values()) {
      if (call.deadlineAt <= now) {
        this.#abortIncoming(
          call,
          new DeadlineExceededError(call.method, call.timeoutMs),
          "deadline_exceeded",
        );
      } else if (call.deadlineAt < next) next = call.deadlineAt;
    }
    if (next !== Infinity && this.state !== CLOSED) this.#armDeadline(next);
  }

  // ---------------------------------------------------------------- helpers

  #write(frame: Uint8Array): void {
    this.#writeParts(EMPTY, frame);
  }

  /** Sends one frame: `head` (copied at once, so a scratch view will do), then `body`. */
  #writeParts(head: Uint8Array, body: Uint8Array): void {
    try {
      this.#writer.writeParts(head, body);
    } catch (error) {
      if (this.state !== CLOSED) {
        this.#fail(
          new ConnectionClosedError("Writing to the transport failed", { cause: error }),
        );
      }
    }
  }

  /**
   * Sends a frame whose `body` came from {@linkcode encodeBody} just now: copied first if the
   * FrameWriter would keep it while someone else may change it.
   */
  #writeBody(head: Uint8Array, body: Uint8Array): void {
    const keep = bodyHolder !== BODY_OWNED && this.#writer.keepsBody(head.length + body.length);
    this.#writeParts(head, keep ? body.slice() : body);
  }

  /** Sends a stream item as DATA; returns its cost in credit (its payload bytes). */
  #writeData(type: number, id: number, body: Uint8Array): number {
    const head = this.#heads.id(type, id);
    const size = head.length + body.length;
    if (size > this.#peerMaxFrame) throw new FrameTooLargeError(size, this.#peerMaxFrame);
    if (bodyHolder === BODY_LENT && this.#writer.keepsBody(size)) {
      // The producer's own bytes, written as they are: every pump pulls its next item (after
      // which the producer may change them) only once they are written; see writable().
      this.#writeParts(head, body);
      const done = (): void => {
        if (this.#lentItemsWritten === written) this.#lentItemsWritten = undefined;
      };
      const written: Promise<void> = this.#writer.flush().then(done, done);
      this.#lentItemsWritten = written;
    } else {
      this.#writeBody(head, body);
    }
    return size;
  }

  #writeError(id: number, wire: { name: string; message: string; code: string }): void {
    this.#write(encodeIdFrame(ERROR_R1, id, utf8.encode(JSON.stringify(wire))));
  }

  #errorBody(error: unknown): Uint8Array {
    return encodeErrorBody(error, {
      stack: this.#config.trustPeer,
      maxBytes: this.#peerMaxFrame - ENVELOPE_SLACK,
      // A stream item too big for the peer (#writeData) is reported like a too-big result.
      defaultCode: error instanceof FrameTooLargeError ? "frame_too_large" : undefined,
    });
  }

  #codecsFor(method: string): MethodCodecs {
    const codecs = this.#config.methodCodecs;
    return codecs === undefined ? this.#defaultCodecs : codecs.get(method) ?? this.#defaultCodecs;
  }

  #methodName(method: string): Uint8Array {
    let bytes = this.#methodBytes.get(method);
    if (bytes === undefined) {
      bytes = utf8.encode(method);
      if (bytes.length === 0 || bytes.length > MAX_METHOD_BYTES) {
        throw new RangeError(
          `Method names must be 1 to ${MAX_METHOD_BYTES} UTF-8 bytes, got ${bytes.length}`,
        );
      }
      this.#methodBytes.set(method, bytes);
    }
    return bytes;
  }

  #notOpenError(): ConnectionClosedError {
    return new ConnectionClosedError(
      this.state === HANDSHAKE
        ? "The channel is not open yet: await openChannel()"
        : this.state === CLOSING
        ? "The channel is closing"
        : "The channel is closed",
      this.#failure && { cause: this.#failure },
    );
  }
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === "object" && value !== null && Symbol.asyncIterator in value;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null &&
    typeof (value as { then?: unknown }).then === "function";
}

function paramInbox(call: IncomingCall, what: string): StreamInbox<unknown> {
  if (call.inbox === undefined) {
    throw new ProtocolError(`${what} for call ${call.id}, which has no param stream`);
  }
  return call.inbox;
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

function controlFrameError(size: number): ProtocolError {
  return new ProtocolError(
    `A frame of ${size} bytes where HELLO and GOODBYE frames are at most ` +
      `${MAX_CONTROL_FRAME_BYTES} bytes`,
  );
}

function creditError(id: number, stream: string): ProtocolError {
  return new ProtocolError(`DATA beyond the credit of call ${id}'s ${stream} stream`);
}

function parseJson(body: Uint8Array): unknown {
  try {
    return JSON.parse(text.decode(body));
  } catch {
    return undefined;
  }
}

function parseGoodbye(body: Uint8Array): { code?: string; reason?: string } {
  if (body.length === 0) return {};
  const parsed = parseJson(body) as Record<string, unknown> | undefined;
  return {
    code: typeof parsed?.code === "string" ? parsed.code : undefined,
    reason: typeof parsed?.reason === "string" ? parsed.reason : undefined,
  };
}

/** A GOODBYE body short enough for its frame to fit in 1024 bytes (docs/protocol.md §2). */
function goodbyeBody(goodbye: { code: string; reason: string }): Uint8Array {
  let reason = goodbye.reason.slice(0, 600);
  let body = utf8.encode(JSON.stringify({ code: goodbye.code, reason }));
  while (body.length >= MAX_CONTROL_FRAME_BYTES) {
    reason = reason.slice(0, reason.length >> 1);
    body = utf8.encode(JSON.stringify({ code: goodbye.code, reason }));
  }
  return body;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
