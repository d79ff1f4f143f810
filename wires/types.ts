/**
 * The protocol seam: everything the engine (`channel/`) knows about a wire protocol. A wire is
 * one folder under `wires/` (conduit's own in `wires/conduit/`, JSON-RPC 2.0 in
 * `wires/jsonrpc/`) and is given to the engine explicitly (`new Channel(transport, options,
 * wire)`); the engine never imports a particular wire. The long form, and what a third
 * protocol needs, is docs/wires.md.
 *
 * - **Calls and ids.** The engine names a call by a positive integer handle: its own calls'
 *   in increasing order, the peer's as the wire maps them (a JSON-RPC id to the next handle,
 *   forgotten at the call's terminal write). A frame about a handle never started or already
 *   finished is a `ProtocolError` named with the wire's {@linkcode EventNames}.
 * - **Reading.** The wire splits bytes into frames ({@linkcode Wire.decoder}) and turns each,
 *   checked whole, into calls on three sinks: {@linkcode OutgoingEvents},
 *   {@linkcode IncomingEvents}, {@linkcode LifecycleEvents}. Bodies stay opaque until the
 *   engine decodes them with {@linkcode Wire.decode} and {@linkcode Wire.decodeError}.
 * - **Writing.** The engine writes values through the {@linkcode Outbox}, never bytes; the
 *   outbox owns encoding, framing, the peer's limits (`FrameTooLargeError` before queueing),
 *   body ownership and backpressure. Streams are its {@linkcode StreamOutbox} half, absent
 *   for a wire without streams, where the engine refuses a stream param or result.
 * - **Lifecycle.** {@linkcode Wire.start} begins; the wire reports `onEstablished` (at once
 *   when it has no handshake) or `onRefused`; `Outbox.sendGoodbye` announces a close. A
 *   protocol without a goodbye frame says its peer's end of input is one
 *   ({@linkcode Wire.endIsGoodbye}).
 * - **Cancellation.** `Outbox.sendCancel` tells the peer to stop; {@linkcode Wire.answersCancelled}
 *   says whether the engine waits for a cancelled call's answer (keeping its handle); a wire
 *   whose peer may answer or not (JSON-RPC) says no and drops a late answer itself.
 * - **Errors.** Written as values (`sendResultError`) or engine-made fields (`sendCallFailure`:
 *   `method_not_found`, `invalid_param`, `cancelled`, `deadline_exceeded`); the wire maps
 *   them to its own form.
 *
 * @module
 */

import type { AuthRole, PeerInfo } from "../protocol/handshake.ts";
import type { CallMeta } from "../protocol/format.ts";
import type { Transport } from "../transports/types.ts";
import type { CodecSlot, MethodCodecs } from "./codec_slots.ts";
import type { ErrorClass } from "./error_codec.ts";
import type { ShapingCodec } from "../codecs/types.ts";

export type { CodecSlot, MethodCodecs, PeerInfo };

/** The peer's limits, once known: from its HELLO, or the wire's defaults. */
export interface PeerLimits {
  /** The largest frame payload the peer accepts. */
  readonly maxFrameBytes: number;
  /** How many of this side's calls the peer handles at once. */
  readonly maxInFlight: number;
  /** The credit the peer grants to each stream it receives. */
  readonly streamWindowBytes: number;
  /** The extensions the peer understands (conduit's HELLO `features`). */
  readonly features?: readonly string[];
}

/** An error the engine made itself, by its fields (docs/protocol.md §8). */
export interface EngineError {
  readonly name: string;
  readonly message: string;
  readonly code: string;
}

/** What the wire reports about calls this side started (by handle). */
export interface OutgoingEvents {
  /** The call's single result. */
  onResult(id: number, body: unknown): void;
  /** The call's terminal error. */
  onCallError(id: number, body: unknown): void;
  /** One item of the call's result stream, costing `cost` bytes of credit. */
  onResultItem(id: number, body: unknown, cost: number): void;
  /** The end of the call's result stream (its terminal frame). */
  onResultEnd(id: number): void;
  /** Credit for the call's param stream. */
  onParamCredit(id: number, bytes: number): void;
  /** The handler stopped reading the call's param stream. */
  onParamCancel(id: number): void;
  /** A progress report about the call (a wire with progress notifications). */
  onProgress(id: number, value: unknown): void;
}

/** What the wire reports about calls and notifications the peer starts. */
export interface IncomingEvents {
  /**
   * A call; `streamParam` when its param arrives as a stream (then `body` is empty).
   * `timeoutMs` is its deadline from receipt, 0 for none; `meta` its key and attempt.
   */
  onCall(
    id: number,
    method: string,
    body: unknown,
    timeoutMs: number,
    streamParam: boolean,
    meta: CallMeta | undefined,
  ): void;
  /** A notification. */
  onNotify(method: string, body: unknown): void;
  /**
   * The wire answered a message that was no call (unreadable, invalid) with an error of its
   * own: it counts against `maxInFlight` as a call's answer does until written, so a peer that
   * sends such messages and reads nothing is read no further.
   */
  onRefused(): void;
  /** One item of the call's param stream. */
  onParamItem(id: number, body: unknown, cost: number): void;
  /** The end of the call's param stream. */
  onParamEnd(id: number): void;
  /** The caller's param stream failed. */
  onParamError(id: number, body: unknown): void;
  /** Credit for the call's result stream. */
  onResultCredit(id: number, bytes: number): void;
  /** The caller cancelled the call; `deadline` when its deadline passed. */
  onCancel(id: number, reason: string | undefined, deadline: boolean): void;
}

/** What the wire reports about the connection. */
export interface LifecycleEvents {
  /**
   * The handshake succeeded (at once for a wire without one, with its own limits; `version`,
   * `codec` and `features` describe the peer as the wire knows it). False when this side
   * refused the peer after all (it could not make the handlers for it): the channel has
   * failed, and the wire sends nothing more of its handshake.
   */
  onEstablished(peer: PeerInfo): boolean;
  /**
   * The handshake failed: `goodbye` when this side should tell the peer why (`code`,
   * `message`), false when the peer refused first.
   */
  onRefused(code: string, message: string, goodbye: boolean): void;
  /** The peer is closing: gracefully without a `code`, else because of a failure. */
  onGoodbye(code: string | undefined, reason: string | undefined): void;
}

/** The engine's sinks a wire reports to. */
export interface WireEvents {
  readonly outgoing: OutgoingEvents;
  readonly incoming: IncomingEvents;
  readonly lifecycle: LifecycleEvents;
}

/** How the wire names each event in the engine's error messages (`"DATA(R=1)"`). */
export interface EventNames {
  readonly call: string;
  readonly notify: string;
  readonly result: string;
  readonly callError: string;
  readonly resultItem: string;
  readonly resultEnd: string;
  readonly paramCredit: string;
  readonly paramCancel: string;
  readonly paramItem: string;
  readonly paramEnd: string;
  readonly paramError: string;
  readonly resultCredit: string;
  readonly cancel: string;
  /** A stream item, of either direction. */
  readonly item: string;
  /** The peer's announcement that it closes. */
  readonly goodbye: string;
}

/** Splits the transport's bytes into frames (framing/ decoders have this shape). */
export interface FrameSplitter {
  /** Adds a chunk read from the transport. */
  push(chunk: Uint8Array): void;
  /** The next whole frame of what was pushed, or undefined. @throws {FramingError} */
  next(): Uint8Array | undefined;
  /** The transport ended. @throws {FramingError} Inside a frame. */
  end(): void;
  /** Takes back a received item's memory (see `Channel.recycle`). */
  recycle(item: Uint8Array): boolean;
}

/** Reads the transport's chunks (framing/frame_decoder.ts's FrameReader has this shape). */
export interface ChunkReader {
  /** The next chunk, or `null` at the end. */
  readBytes(): Promise<Uint8Array | null>;
  cancel(): Promise<void>;
}

/** The shared secret and this side's role in the handshake (docs/protocol.md §5.1). */
export interface WireAuth {
  readonly secret: Uint8Array;
  readonly role: AuthRole;
}

/** What every wire is told of the channel it serves. */
export interface WireOptions {
  /** The channel codec's name. */
  readonly codec: string;
  /** The largest frame accepted from the peer. */
  readonly maxFrameBytes: number;
  /** How many of the peer's calls this side serves at once. */
  readonly maxInFlight: number;
  /** The credit this side grants each stream it receives. */
  readonly streamWindowBytes: number;
  /** Bytes queued for the peer at which writers should wait. */
  readonly writeHighWaterMark: number;
  /** Whether errors sent carry their stack, and the peer's errors keep theirs. */
  readonly trustPeer: boolean;
  /**
   * A shared secret the peer must prove it holds before the channel opens, and this side's
   * role in proving it; a wire without authentication throws a TypeError when given one.
   */
  readonly auth?: WireAuth;
  /** Classes to revive the peer's errors as, by name. */
  readonly errorClasses: ReadonlyMap<string, ErrorClass>;
  /** A write failed: the channel fails with it. */
  readonly onWriteFailure: (error: unknown) => void;
  /** Where the wire trace goes, one line per frame; absent when the channel does not trace. */
  readonly trace?: WireTrace;
  /**
   * The channel codec, when records may be sent by shape (docs/protocol.md §14): it can, and
   * the channel's `shapes` option is on. It makes the shape tables. A wire without shapes
   * ignores it.
   */
  readonly shapes?: ShapingCodec<unknown>;
}

/** Makes the wire of one connection (conduit's is the default). */
export type WireFactory = (transport: Transport, options: WireOptions) => Wire;

/** The read side and lifecycle of a wire protocol. */
export interface Wire {
  /** The names of events, for error messages. */
  readonly names: EventNames;
  /** Whether the engine waits for the answer to a call it cancelled (see the module doc). */
  readonly answersCancelled: boolean;
  /** The write side. */
  readonly outbox: Outbox;
  /** Splits what {@linkcode reader} reads into frames. */
  readonly decoder: FrameSplitter;
  /** Connects the engine's sinks; called once, before {@linkcode start}. */
  attach(events: WireEvents): void;
  /** Begins: sends the handshake, if the protocol has one. */
  start(): void;
  /** The transport's reader; made once, on first use. */
  reader(): ChunkReader;
  /**
   * Reports one frame to the engine's sinks (a JSON-RPC batch is one frame of several
   * events). @throws {ProtocolError}
   */
  read(frame: Uint8Array): void;
  /** Decodes a body with `slot`'s codec. @throws {CodecError} */
  decode(slot: CodecSlot, body: unknown): unknown;
  /** Revives an error body; `method` is the call's, when it is about one. */
  decodeError(body: unknown, method: string | undefined): Error;
  /**
   * How the peer's end of the connection reads after the handshake, in the protocol's own
   * words (JSON-RPC has no goodbye to miss); absent, the engine says it missed a GOODBYE.
   */
  peerEnded?(): string;
  /**
   * Whether the peer's input ending between frames after the handshake is its goodbye, as in
   * JSON-RPC, which has no other (read when the input ends): the channel then closes
   * gracefully (`closed` resolves) unless a call of this side's is still unanswered. Absent,
   * an end without a goodbye fails the channel.
   */
  readonly endIsGoodbye?: boolean;
  /**
   * Settles when what the wire loads on demand (conduit's authentication step) is there: the
   * engine reads no frame before. Absent when nothing is loaded.
   */
  readonly ready?: Promise<void>;
}

/**
 * The write side of a wire protocol. Writes never wait; a write that cannot reach the
 * transport fails the connection through the wire's failure callback.
 */
export interface Outbox {
  /** Room below the high-water mark; not positive when writers should wait. */
  readonly desiredSize: number;
  /** Bytes written to the transport so far (telemetry's count of bytes sent). */
  readonly bytesWritten: number;
  /** Settles when {@linkcode desiredSize} is positive again (rejects once writing failed). */
  readonly ready: Promise<void>;
  /** Undefined while the transport takes more; else a promise of when it will (pumps wait). */
  writable(): Promise<void> | undefined;
  /** The stream half: undefined for a wire without streams (the engine refuses streams). */
  readonly streams: StreamOutbox | undefined;

  /**
   * Encodes a call's param ahead of sending it, checking it against the peer's limit.
   * `waits` when the call will wait for a slot (a body the codec may reuse is copied);
   * `progress` when the caller wants progress reports (a wire that has them asks for them).
   * @throws {CodecError | FrameTooLargeError} And a RangeError or TypeError for a name the
   * wire's CALL cannot carry.
   */
  callParam(
    method: string,
    slot: CodecSlot,
    value: unknown,
    waits: boolean,
    progress: boolean,
  ): Uint8Array;
  /**
   * A call whose param `callParam` encoded ends unsent (cancelled or failed while it waited):
   * a wire that noted something of it lets go (optional).
   */
  dropCallParam?(body: Uint8Array): void;
  /**
   * Sends a call whose param `callParam` encoded (empty for a streamed param), with its `meta`
   * where the peer reads it. Returns, when the param is `value`'s own bytes still held for
   * writing, when they are written.
   */
  sendCall(
    id: number,
    method: string,
    streamParam: boolean,
    timeoutMs: number,
    body: Uint8Array,
    value: unknown,
    meta: CallMeta | undefined,
  ): Promise<void> | undefined;
  /** Tells the peer to stop call `id`; `code` is `deadline_exceeded` for a passed deadline. */
  sendCancel(id: number, reason: string, code: string | undefined): void;
  /** Sends a notification. @throws {CodecError | FrameTooLargeError} */
  sendNotify(method: string, slot: CodecSlot, value: unknown): void;

  /** Answers call `id` with a value (or with `frame_too_large` when it does not fit). */
  sendResult(id: number, method: string, slot: CodecSlot, value: unknown): void;
  /** Answers call `id` with the error its handler threw. */
  sendResultError(id: number, error: unknown): void;
  /** Answers call `id` with an error the engine made. */
  sendCallFailure(id: number, error: EngineError): void;

  /** Says this side closes: gracefully without a `code`. */
  sendGoodbye(code?: string, reason?: string): void;
  /** Checks the peer is alive (a wire without pings does nothing). */
  sendPing(): void;
  /** Starts writing what is queued now, without waiting for the end of the turn. */
  writeQueued(): void;
  /** Settles once everything queued so far is written. */
  flush(): Promise<void>;
  /** Writes what is queued and closes the write side. */
  close(): Promise<void>;
  /** Drops what is queued and closes the write side. */
  abort(): Promise<void>;
}

/** The stream half of an {@linkcode Outbox}: items, their credit and their end, both ways. */
export interface StreamOutbox {
  /**
   * Checks, before a call whose param is a stream is queued, that its name can be sent (as
   * `callParam` does for a call with a value).
   * @throws {RangeError | TypeError} For a name this wire's CALL cannot carry.
   */
  checkStreamCall(method: string): void;
  /** Grants credit for call `id`'s result stream. */
  sendResultCredit(id: number, bytes: number): void;
  /** Sends one item of call `id`'s param stream; returns its cost in credit. */
  sendParamItem(id: number, slot: CodecSlot, value: unknown): number;
  /** Ends call `id`'s param stream. */
  sendParamEnd(id: number): void;
  /** Fails call `id`'s param stream. */
  sendParamError(id: number, error: unknown): void;
  /** Sends one item of call `id`'s result stream; returns its cost in credit. */
  sendResultItem(id: number, slot: CodecSlot, value: unknown): number;
  /** Ends call `id`'s result stream: its terminal write. */
  sendResultEnd(id: number): void;
  /** Grants credit for call `id`'s param stream. */
  sendParamCredit(id: number, bytes: number): void;
  /** Tells the caller the handler stopped reading call `id`'s param stream. */
  sendParamCancel(id: number): void;
}

/** A channel's wire trace: where its lines go, and how a body reads with the channel codec. */
export interface WireTrace {
  /** Takes one line. */
  readonly sink: (line: string) => void;
  /** A body as the channel codec decodes it, for the line (throws when it does not decode). */
  readonly render: (body: Uint8Array) => string;
}
