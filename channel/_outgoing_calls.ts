// The calls this side starts: the ids it issues, the calls in flight by id, the queue of
// calls waiting for a slot under the peer's maxInFlight, and what the wire reports about
// them. Each call owns its state (OutgoingCall, below); this registry asks it to change. Also
// here, as the incoming calls (_incoming_calls.ts) share them: the registry base both
// directions extend, the table of calls by id, and how a codec's failure is said.

import { type CallMeta, callMetaBody, ProtocolError } from "../protocol/format.ts";
import { positiveOption } from "../_options.ts";
import { CodecError, ConduitError } from "../errors.ts";
import type { MethodCodecs } from "../wires/codec_slots.ts";
import { CallResult, type PumpOwner, reasonText, StreamPump } from "./_remote.ts";
import type { Outbox, OutgoingEvents, PeerLimits, Wire } from "../wires/types.ts";
import { DeadlineExceededError } from "./errors.ts";
import type { CallOptions } from "./types.ts";

// ---------------------------------------------------------------- the registries' base

// What the registries of calls in both directions share: the calls by id, the wire they talk
// through, the lifecycle and deadline timer they consult, and the peer's stream window. It
// comes first because the registries below extend it. The engine (_core.ts) owns the
// lifecycle and the timer; the registries see them through the two interfaces here.

/** What the registries read of the connection's state (the engine's Lifecycle). */
export interface LifecycleView {
  readonly open: boolean;
  readonly closed: boolean;
  /** Whether the peer said goodbye (it starts nothing new after it). */
  readonly peerClosing: boolean;
}

/** What the registries use of the channel's deadline timer (the engine's Deadlines). */
export interface DeadlineTimer {
  /** `performance.now()` when the frames being dispatched arrived. */
  readonly receivedAt: number;
  /** Bytes received from the peer so far. */
  readonly bytesReceived: number;
  /** Makes sure the timer fires by `at` (a `performance.now()` time). */
  arm(at: number): void;
}

/** A registry of calls of one direction. */
export abstract class CallTable<T extends { readonly id: number }> {
  protected readonly wire: Wire;
  protected readonly life: LifecycleView;
  protected readonly deadlines: DeadlineTimer;
  protected readonly calls: IdTable<T>;
  #peerWindow = 1;

  constructor(wire: Wire, life: LifecycleView, deadlines: DeadlineTimer, ring: number) {
    this.wire = wire;
    this.life = life;
    this.deadlines = deadlines;
    this.calls = new IdTable(ring);
  }

  /** The calls in flight. */
  get size(): number {
    return this.calls.size;
  }

  /** The credit the peer grants each stream it receives. */
  get peerWindow(): number {
    return this.#peerWindow;
  }

  /** The peer's limits arrived. */
  setPeer(peer: PeerLimits): void {
    this.#peerWindow = peer.streamWindowBytes;
  }
}

/** What the registry needs from the channel. */
export interface OutgoingOptions {
  readonly maxInFlight: number;
  readonly ring: number;
  readonly defaultTimeout: number;
  readonly streamWindowBytes: number;
  readonly codecsFor: (method: string) => MethodCodecs;
  /** The error for a call made while the channel is not open. */
  readonly notOpen: () => Error;
  /** A call finished (activity for the idle timeout; while closing, it may finish the close). */
  readonly onIdle: () => void;
}

/** The calls this side starts. */
export class OutgoingCalls extends CallTable<OutgoingCall> implements OutgoingEvents, CallRegistry {
  readonly #options: OutgoingOptions;
  #queue: OutgoingCall[] = [];
  #queueHead = 0;
  #queued = 0;
  #nextId = 1;
  #callLimit = 1;

  constructor(wire: Wire, life: LifecycleView, deadlines: DeadlineTimer, options: OutgoingOptions) {
    super(wire, life, deadlines, options.ring);
    this.#options = options;
  }

  get closed(): boolean {
    return this.life.closed;
  }

  get answersCancelled(): boolean {
    return this.wire.answersCancelled;
  }

  /** The peer's limits arrived: they bound the calls in flight. */
  override setPeer(peer: PeerLimits): void {
    super.setPeer(peer);
    this.#callLimit = Math.min(this.#options.maxInFlight, peer.maxInFlight);
  }

  /** Starts a call; the returned object is both the promise and the stream of its result. */
  call(method: string, param: unknown, options: CallOptions | undefined): OutgoingCall {
    const codecs = this.#options.codecsFor(method);
    const call = new OutgoingCall(
      this,
      this.wire.outbox,
      method,
      codecs,
      this.#options.streamWindowBytes,
    );
    if (!this.life.open) {
      call.reject(this.#options.notOpen());
      return call;
    }
    const waits = this.#queued > 0 || this.calls.size >= this.#callLimit;
    const timeout = options?.timeout ?? this.#options.defaultTimeout;
    if (!call.prepare(param, options, timeout, waits)) return call;
    if (call.deadline !== Infinity) this.deadlines.arm(call.deadline);
    if (waits) {
      this.#queue.push(call);
      this.#queued++;
    } else {
      this.#send(call, true);
    }
    return call;
  }

  sending(call: OutgoingCall): void {
    this.calls.add(call);
  }

  unqueued(_call: OutgoingCall): void {
    this.#queued--;
  }

  finished(call: OutgoingCall): void {
    call.finish();
    this.calls.delete(call.id);
    if (this.#queued > 0) this.#sendQueued();
    this.#options.onIdle();
  }

  /** Fails every call, in flight or queued (the connection is gone). */
  failAll(error: unknown): void {
    for (const call of this.calls.values()) call.reject(error);
    this.calls.clear();
    this.failQueued(error);
  }

  /** Fails every call still waiting in the queue (none of them reached the wire). */
  failQueued(error: unknown): void {
    if (this.#queued === 0) return;
    for (let i = this.#queueHead; i < this.#queue.length; i++) {
      const call = this.#queue[i];
      if (call.state === QUEUED) call.reject(error);
    }
    this.#queue = [];
    this.#queueHead = 0;
    this.#queued = 0;
  }

  /** Cancels the calls whose deadline is at or before `now`; returns the next deadline. */
  expire(now: number): number {
    let next = Infinity;
    for (const call of this.calls.values()) {
      if (call.deadline <= now) {
        call.abortCall(
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
        call.abortCall(new DeadlineExceededError(call.method, call.timeoutMs), "");
      } else if (call.deadline < next) next = call.deadline;
    }
    return next;
  }

  // ---------------------------------------------------------------- what the wire reports

  onResult(id: number, body: unknown): void {
    const names = this.wire.names;
    const call = this.#ownCall(id, names.result);
    if (call.streaming) {
      throw new ProtocolError(`${names.result} for call ${id} after its stream's ${names.item}`);
    }
    if (call.state === SENT) {
      let value: unknown;
      try {
        value = this.wire.decode(call.codecs.result, body);
      } catch (error) {
        call.fail(
          codecFailure(error, `The result of "${call.method}" from the peer cannot be decoded`),
          true,
        );
        this.finished(call);
        return;
      }
      call.settle(value);
    }
    this.finished(call);
  }

  onCallError(id: number, body: unknown): void {
    const call = this.#ownCall(id, this.wire.names.callError);
    if (call.state === SENT) {
      const error = this.wire.decodeError(body, call.method);
      if ((error as { code?: unknown }).code === "deadline_exceeded" && call.timeoutMs > 0) {
        call.fail(new DeadlineExceededError(call.method, call.timeoutMs), false);
      } else {
        call.fail(error, false);
      }
    }
    this.finished(call);
  }

  onResultItem(id: number, body: unknown, cost: number): void {
    const call = this.#ownCall(id, this.wire.names.resultItem);
    call.markStreaming();
    if (call.state !== SENT) return;
    let item: unknown;
    try {
      item = this.wire.decode(call.codecs.result, body);
    } catch (error) {
      if (!call.charge(cost)) throw this.#creditError(id);
      call.abortCall(error, "a stream item could not be decoded");
      return;
    }
    if (!call.data(item, cost)) throw this.#creditError(id);
  }

  onResultEnd(id: number): void {
    const call = this.#ownCall(id, this.wire.names.resultEnd);
    if (call.state === SENT) call.end();
    this.finished(call);
  }

  onParamCredit(id: number, bytes: number): void {
    this.#streamCall(id, this.wire.names.paramCredit)?.paramCredit(bytes);
  }

  onParamCancel(id: number): void {
    this.#streamCall(id, this.wire.names.paramCancel)?.stopParam();
  }

  onProgress(id: number, value: unknown): void {
    this.calls.get(id)?.progress(value);
  }

  // ---------------------------------------------------------------- helpers

  #send(call: OutgoingCall, fresh: boolean): void {
    call.send(this.#nextId++, fresh);
  }

  #sendQueued(): void {
    while (this.#queued > 0 && this.calls.size < this.#callLimit && this.life.open) {
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

  /** The call a frame about this side's call is about; throws for ids never issued or finished. */
  #ownCall(id: number, what: string): OutgoingCall {
    const call = this.calls.get(id);
    if (call !== undefined) return call;
    throw new ProtocolError(
      id >= this.#nextId
        ? `${what} for call ${id}, which this side never started`
        : `${what} for call ${id}, which has already finished`,
    );
  }

  /** Like #ownCall, but a finished call is no error: its param stream's frames may cross. */
  #streamCall(id: number, what: string): OutgoingCall | undefined {
    const call = this.calls.get(id);
    if (call === undefined && id >= this.#nextId) {
      throw new ProtocolError(`${what} for call ${id}, which this side never started`);
    }
    return call;
  }

  #creditError(id: number): ProtocolError {
    return new ProtocolError(
      `${this.wire.names.item} beyond the credit of call ${id}'s result stream`,
    );
  }
}

// ---------------------------------------------------------------- one outgoing call

// The caller's side of one call on the wire: queued for a slot, sent, cancelled, done. Its
// state changes only here; the registry of calls (OutgoingCalls) asks for the changes. It
// writes its own frames (its param stream, its result stream's credit, its cancel) through
// the outbox, and its outcome reaches the caller through its CallResult faces.

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
    if (
      options?.key !== undefined || options?.attempt !== undefined ||
      options?.headers !== undefined
    ) {
      try {
        callMetaBody({ key: options.key, attempt: options.attempt, headers: options.headers });
      } catch (error) {
        // The problem names the option (key, attempt or a header); say which call it is.
        this.reject(
          error instanceof RangeError
            ? new RangeError(`The call to "${this.method}": ${error.message}`)
            : error,
        );
        return false;
      }
    }
    this.#options = options;
    if (isAsyncIterable(param)) {
      const streams = this.#outbox.streams;
      try {
        if (streams === undefined) {
          throw new TypeError(
            `This wire has no streams: a call cannot take a stream as its param (method "${this.method}")`,
          );
        }
        streams.checkStreamCall(this.method);
      } catch (error) {
        this.reject(error);
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
    if (this.#body !== EMPTY) {
      // Encoded, never sent: the wire lets go of what it noted for it.
      this.#outbox.dropCallParam?.(this.#body);
      this.#body = EMPTY;
    }
    if (this.#streamParam && this.#param !== undefined) {
      // A stream param never sent: its source is stopped as a pump stops one, so that what it
      // holds (a file, a subscription) is let go.
      const source = this.#param as AsyncIterable<unknown>;
      this.#param = undefined;
      void Promise.resolve(source[Symbol.asyncIterator]().return?.()).catch(() => {});
    }
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
    // A timeout beyond what a varint carries (Number.MAX_VALUE as "no real limit") is sent as
    // the longest one the peer reads: more would be a protocol error that ends the connection.
    const timeoutMs = this.#deadline === Infinity ? 0 : Math.min(
      Number.MAX_SAFE_INTEGER,
      fresh
        ? Math.ceil(this.#timeoutMs)
        : Math.max(1, Math.ceil(this.#deadline - performance.now())),
    );
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
      this.#registry.unqueued(this);
      this.reject(error);
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
    if (this.#state !== SENT) return;
    const streams = this.#outbox.streams!;
    try {
      streams.sendParamError(this.#id, error);
    } catch (unsendable) {
      // The source failed with a value no error body can say: the stream still ends.
      streams.sendParamError(
        this.#id,
        unsendableFailure(`The param stream of "${this.method}"`, unsendable),
      );
    }
  }

  writable(): Promise<void> | undefined {
    return this.#outbox.writable();
  }
}

/**
 * The error sent instead of a failure that could not be encoded (a thrown value with no string
 * form, an error whose getters throw): `subject` failed, and the stream or call still ends.
 */
export function unsendableFailure(subject: string, unsendable: unknown): Error {
  let why = "";
  try {
    why = unsendable instanceof Error ? `: ${unsendable.message}` : "";
  } catch {
    // An error whose message getter throws says nothing more.
  }
  return Object.assign(
    new Error(`${subject} failed with a value that cannot be sent${why}`),
    { code: "internal" },
  );
}

/** Whether `value` is a stream (a param or a handler's result). */
export function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === "object" && value !== null && Symbol.asyncIterator in value;
}

/** The call's meta from its options, when it has any. */
function metaOf(options: CallOptions | undefined): CallMeta | undefined {
  if (options === undefined) return undefined;
  const { key, attempt, headers } = options;
  return key === undefined && attempt === undefined && headers === undefined
    ? undefined
    : { key, attempt, headers };
}

// ---------------------------------------------------------------- calls by id

// The calls in flight, by id. Ids are handed out in increasing order (docs/protocol.md §5) and
// most calls finish before many more start, so a ring indexed by an id's low bits holds
// nearly all of them with no hashing and nothing allocated per call, where a Map churned by
// one insert and one delete per call rehashes into new tables again and again. A call still
// running when its slot comes round again waits in an overflow Map. The ring starts small and
// doubles, up to its capacity, when a slot it needs is taken: a connection that never has many
// calls in flight (or ends at once, as hostile ones do) never allocates the whole ring.

/** The ring's first size. */
const MIN_SLOTS = 16;

/** Something with a numeric id. */
interface HasId {
  readonly id: number;
}

/** A table of values by their (increasing) ids. */
export class IdTable<T extends HasId> {
  #slots: Array<T | undefined>;
  #mask: number;
  readonly #capacity: number;
  readonly #overflow = new Map<number, T>();
  #size = 0;

  /** @param capacity Most slots in the ring, rounded up to a power of two (at least 16). */
  constructor(capacity: number) {
    let slots = MIN_SLOTS;
    while (slots < capacity) slots *= 2;
    this.#capacity = slots;
    this.#slots = new Array<T | undefined>(MIN_SLOTS).fill(undefined);
    this.#mask = MIN_SLOTS - 1;
  }

  get size(): number {
    return this.#size;
  }

  get(id: number): T | undefined {
    const value = this.#slots[id & this.#mask];
    if (value !== undefined && value.id === id) return value;
    return this.#overflow.size === 0 ? undefined : this.#overflow.get(id);
  }

  /** Adds `value` under its id, which must not be in the table. */
  add(value: T): void {
    let index = value.id & this.#mask;
    while (this.#slots[index] !== undefined && this.#slots.length < this.#capacity) {
      this.#grow();
      index = value.id & this.#mask;
    }
    if (this.#slots[index] === undefined) this.#slots[index] = value;
    else this.#overflow.set(value.id, value);
    this.#size++;
  }

  delete(id: number): void {
    const index = id & this.#mask;
    const value = this.#slots[index];
    if (value !== undefined && value.id === id) {
      this.#slots[index] = undefined;
      this.#size--;
    } else if (this.#overflow.delete(id)) {
      this.#size--;
    }
  }

  /** Every value; deleting while iterating is allowed. */
  *values(): IterableIterator<T> {
    // A connection that ends with nothing in flight (most hostile ones) skips the ring's scan.
    if (this.#size === 0) return;
    for (const value of this.#slots) if (value !== undefined) yield value;
    yield* this.#overflow.values();
  }

  /** Doubles the ring; what waited in the overflow moves in where its slot is free. */
  #grow(): void {
    const slots = new Array<T | undefined>(this.#slots.length * 2).fill(undefined);
    const mask = slots.length - 1;
    // Two values held in distinct slots keep distinct slots: their ids differ in the old bits.
    for (const value of this.#slots) if (value !== undefined) slots[value.id & mask] = value;
    for (const [id, value] of this.#overflow) {
      if (slots[id & mask] === undefined) {
        slots[id & mask] = value;
        this.#overflow.delete(id);
      }
    }
    this.#slots = slots;
    this.#mask = mask;
  }

  clear(): void {
    this.#slots.fill(undefined);
    this.#overflow.clear();
    this.#size = 0;
  }
}

// ---------------------------------------------------------------- codec failures

// A codec's failure, said as what failed: the param or result of which method, on which side.
// A codec names the path inside the value (`$ is an instance of Timeout`) but not whose value
// it was; a result that cannot be sent reaches the caller, whose own handler may pass it on
// to another caller, so the message says which method's handler made it.

/** `error` as a CodecError naming `subject`; any other error as it is. */
export function codecFailure(error: unknown, subject: string): unknown {
  if (!(error instanceof CodecError)) return error;
  return new CodecError(error.codec, error.operation, error, subject);
}
