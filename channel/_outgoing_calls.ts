// The calls this side starts: the ids it issues, the calls in flight by id, the queue of
// calls waiting for a slot under the peer's maxInFlight, and what the wire reports about
// them. Each call owns its state (_outgoing_call.ts); this registry asks it to change.

import { codecFailure } from "./_codec_failure.ts";
import { ProtocolError } from "../protocol/protocol_error.ts";
import type { MethodCodecs } from "../wires/codec_slots.ts";
import type { Deadlines } from "./_deadlines.ts";
import { CallTable } from "./_call_table.ts";
import type { Lifecycle } from "./_lifecycle.ts";
import { type CallRegistry, OutgoingCall, QUEUED, SENT } from "./_outgoing_call.ts";
import type { OutgoingEvents, PeerLimits, Wire } from "../wires/types.ts";
import { DeadlineExceededError } from "./errors.ts";
import type { CallOptions } from "./types.ts";

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

  constructor(wire: Wire, life: Lifecycle, deadlines: Deadlines, options: OutgoingOptions) {
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
