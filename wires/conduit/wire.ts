// conduit's own wire protocol (docs/protocol.md) behind the engine's seam (_wire.ts): the
// length-prefixed framing, the HELLO handshake, and each frame turned into an engine event
// through protocol/'s one table of frame readers, which parses fields in place and matches
// recent method names by their bytes, so a common frame costs no allocation to read.

import {
  AUTH_KIND,
  CALL_FLAG_META,
  CALL_FLAG_STREAM_PARAM,
  CALL_META_FEATURE,
  type CallMeta,
  callMetaBody,
  FRAME_KINDS,
  MAX_CONTROL_FRAME_BYTES,
  MAX_METHOD_BYTES,
  parseCallMeta,
  ProtocolError,
  R_FLAG,
  SHAPES_FEATURE,
} from "../../protocol/format.ts";
import { FrameDecoder, FrameReader } from "../../framing/frame_decoder.ts";
import {
  bodyStart,
  callHeadSize,
  cancelBody,
  encodeBodyFrame,
  encodeIdFrame,
  encodeShape,
  EnvelopeHeads,
  FrameParser,
  type FrameSink,
  MethodNames,
  parseCancel,
  readFrame,
  varintSize,
  writeCallHead,
} from "../../protocol/_frame_table.ts";
import { FrameWriter } from "../../framing/frame_writer.ts";
import { decodeEnvelope } from "../../protocol/envelope.ts";
import {
  AUTH_NONCE_BYTES,
  goodbyeBody,
  helloBody,
  parseGoodbye,
  parseHello,
  type PeerInfo,
} from "../../protocol/handshake.ts";
import type { Transport } from "../../transports/types.ts";
import {
  BODY_GIVEN,
  BODY_LENT,
  BODY_OWNED,
  BODY_SCRATCH,
  bodyHolder,
  type CodecSlot,
  decodeBody,
  encodeBody,
  shapingCodec,
  traceFeed,
  WriterOutbox,
  writeTarget,
} from "../codec_slots.ts";
import type { ConduitAuth } from "./auth.ts";
import type {
  EngineError,
  EventNames,
  IncomingEvents,
  LifecycleEvents,
  Outbox,
  OutgoingEvents,
  PeerLimits,
  StreamOutbox,
  Wire,
  WireEvents,
  WireFactory,
  WireOptions,
} from "../types.ts";
import { decodeErrorBody, encodeErrorBody } from "../error_codec.ts";
import { CodecError, FrameTooLargeError, ShapeError } from "../../errors.ts";
import type {
  RecordShape as Shape,
  ShapeDecoderTable as ShapeDecoder,
  ShapeEncoderTable as ShapeEncoder,
  ShapingCodec,
} from "../../codecs/types.ts";
import { forgetGivenUp, isGivenUp } from "../../transfer.ts";

/** The frame names of conduit's events, as docs/protocol.md writes them. */
const NAMES: EventNames = {
  call: "CALL",
  notify: "NOTIFY",
  result: "RESULT",
  callError: "ERROR(R=1)",
  resultItem: "DATA(R=1)",
  resultEnd: "END(R=1)",
  paramCredit: "CREDIT(R=1)",
  paramCancel: "CANCEL(R=1)",
  paramItem: "DATA(R=0)",
  paramEnd: "END(R=0)",
  paramError: "ERROR(R=0)",
  resultCredit: "CREDIT(R=0)",
  cancel: "CANCEL(R=0)",
  item: "DATA",
  goodbye: "GOODBYE",
};

/** The extensions this side reads (docs/protocol.md §11), with shapes on and off. */
const FEATURES = [CALL_META_FEATURE];
const FEATURES_WITH_SHAPES = [CALL_META_FEATURE, SHAPES_FEATURE];

/** Makes conduit's wire for one connection: the default {@linkcode WireFactory}. */
export const conduitWire: WireFactory = (transport, options) => new ConduitWire(transport, options);

/**
 * What this side reads by shape (docs/protocol.md §14): the peer's shape table, and the
 * protocol error a body that broke the commit rule left, which fails the channel.
 */
interface ReadShapes {
  table: ShapeDecoder;
  failure: ProtocolError | undefined;
}

/** conduit's {@linkcode Wire}. */
export class ConduitWire implements Wire, FrameSink {
  readonly outbox: ConduitOutbox;
  readonly decoder: FrameDecoder;
  readonly #transport: Transport;
  readonly #options: WireOptions;
  readonly #hello: Uint8Array;
  readonly #parser = new FrameParser(new MethodNames());
  #reader: FrameReader | undefined;
  #greeted = false;
  /** Feeds the wire trace, when the channel traces. */
  readonly #onFrame: ((out: boolean, frame: Uint8Array) => void) | undefined;
  /** The authentication step, when this side has a shared secret (loaded on demand). */
  #auth: ConduitAuth | undefined;
  readonly ready: Promise<void> | undefined;
  #outgoing!: OutgoingEvents;
  #incoming!: IncomingEvents;
  #lifecycle!: LifecycleEvents;
  /** The peer's record shapes, once both HELLOs listed the shapes feature. */
  #shapes: ReadShapes | undefined;

  /** @throws {RangeError} When this side's HELLO would not fit a control frame. */
  constructor(transport: Transport, options: WireOptions) {
    const auth = options.auth;
    const nonce = auth && crypto.getRandomValues(new Uint8Array(AUTH_NONCE_BYTES));
    const hello = helloBody({
      auth: auth && { nonce: nonce!, role: auth.role },
      codec: options.codec,
      features: options.shapes !== undefined ? FEATURES_WITH_SHAPES : FEATURES,
      maxFrameBytes: options.maxFrameBytes,
      maxInFlight: options.maxInFlight,
      streamWindowBytes: options.streamWindowBytes,
    });
    if (hello.length >= MAX_CONTROL_FRAME_BYTES) {
      // Checked before the transport is touched: nothing to release.
      throw new RangeError(
        `The HELLO would be ${hello.length + 1} bytes, over ${MAX_CONTROL_FRAME_BYTES}: ` +
          `the codec name is too long (${JSON.stringify(options.codec.slice(0, 40))}…)`,
      );
    }
    this.#hello = hello;
    const trace = options.trace &&
      traceFeed(
        options.trace,
        () => import("./_trace.ts").then(({ ConduitTrace }) => ConduitTrace),
      );
    this.#onFrame = trace?.feed;
    // The HMAC step is loaded only by a channel with a secret; no frame is read before.
    const authReady = auth &&
      import("./auth.ts").then(({ ConduitAuth }) => {
        this.#auth = new ConduitAuth(auth.secret, auth.role, nonce!);
      });
    // The engine reads no frame before the auth step and the trace's formatter are there.
    this.ready = authReady && trace
      ? Promise.all([authReady, trace.loaded]).then(() => {})
      : (authReady || trace?.loaded);
    this.#transport = transport;
    this.#options = options;
    // Until the peer's HELLO is accepted, nothing larger than a HELLO is read, checked from
    // the header (docs/protocol.md §2): an unauthenticated peer can make this side buffer
    // at most that much. The channel's own limit applies once the handshake succeeds.
    this.decoder = new FrameDecoder({
      maxFrameBytes: Math.min(MAX_CONTROL_FRAME_BYTES, options.maxFrameBytes),
      // A large frame's body is read into a buffer of its own, behind no envelope: a thread
      // transport moves a transferred body there without a copy, and a body handed on with
      // transfer() is a whole buffer again.
      splitHead: bodyStart,
    });
    const writer = new FrameWriter(writeTarget(transport), {
      maxFrameBytes: 0xffff_ffff,
      highWaterMark: options.writeHighWaterMark,
      // A failed write (the peer stopped reading, the socket broke) fails the channel now:
      // otherwise it would be noticed only at the next write or when reads end, and pending
      // calls would wait for their deadlines.
      onFailure: options.onWriteFailure,
      // A transport is done with a chunk once its write resolved (transports/types.ts).
      reuseChunks: true,
    });
    this.outbox = new ConduitOutbox(writer, {
      trustPeer: options.trustPeer,
      onWriteError: options.onWriteFailure,
      reuse: (bytes) => void this.decoder.recycle(bytes),
      onFrame: this.#onFrame,
    });
  }

  get names(): EventNames {
    return NAMES;
  }

  /** A conduit peer answers a call it was told to cancel (with its ERROR or RESULT). */
  get answersCancelled(): boolean {
    return true;
  }

  attach(events: WireEvents): void {
    this.#outgoing = events.outgoing;
    this.#incoming = events.incoming;
    this.#lifecycle = events.lifecycle;
  }

  start(): void {
    this.outbox.sendHello(this.#hello);
  }

  reader(): FrameReader {
    // Reads the rest of a large frame straight into its own buffer when the transport can.
    return this.#reader ??= new FrameReader(this.#transport, this.decoder);
  }

  read(frame: Uint8Array): void {
    this.#onFrame?.(false, frame);
    if (this.#greeted) readFrame(frame, this, this.#parser, this.decoder.tail);
    else this.#handshake(frame);
    const failure = this.#shapes?.failure;
    if (failure !== undefined) throw failure;
  }

  decode(slot: CodecSlot, body: unknown): unknown {
    const shapes = this.#shapes?.table;
    const bytes = body as Uint8Array;
    const codec = slot.codec;
    const shaping = shapes === undefined ? undefined : shapingCodec(codec);
    if (shaping === undefined || (bytes.length === 0 && slot.emptyIsUndefined)) {
      return decodeBody(slot, bytes);
    }
    try {
      return shaping.decodeShaped(bytes, shapes!);
    } catch (error) {
      if (error instanceof CodecError && error.cause instanceof ShapeError) {
        // The peer broke the commit rule (docs/protocol.md §14): the channel fails, as a
        // decode usually fails only its call. Read's caller rethrows it after this frame.
        this.#shapes!.failure ??= new ProtocolError(error.cause.message, { cause: error });
      }
      throw error instanceof CodecError ? error : new CodecError(codec.name, "decode", error);
    }
  }

  decodeError(body: unknown, method: string | undefined): Error {
    return decodeErrorBody(body as Uint8Array, {
      classes: this.#options.errorClasses,
      method,
      stack: this.#options.trustPeer,
    });
  }

  #handshake(frame: Uint8Array): void {
    // Until the peer's HELLO is accepted its limit is the smallest one (docs/protocol.md §2).
    if (frame.length > MAX_CONTROL_FRAME_BYTES) throw controlFrameError(frame.length);
    if (frame.length === 0) {
      throw new ProtocolError("A zero-length frame (a frame has a type byte)");
    }
    if (this.#auth?.waiting && frame[0] !== FRAME_KINDS.goodbye) return this.#auth.onFrame(frame);
    const envelope = decodeEnvelope(frame);
    if (envelope.kind === "goodbye") {
      const goodbye = parseGoodbye(envelope.body);
      this.#lifecycle.onRefused(
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
    const outcome = parseHello(envelope.body, this.#options.codec);
    if (!outcome.ok) return this.#lifecycle.onRefused(outcome.code, outcome.message, true);
    const peer = outcome.peer;
    const auth = this.#auth;
    if (auth === undefined) {
      if (outcome.auth === undefined) return this.#established(peer);
      return this.#lifecycle.onRefused(
        "auth_required",
        "The peer requires authentication and this side has no shared secret (the auth option)",
        true,
      );
    }
    auth.start(outcome.auth, { own: this.#hello, peer: envelope.body }, {
      sendAuth: (proof) => this.outbox.sendAuth(proof),
      onEstablished: () => this.#established(peer),
      onRefused: (code, message) => this.#lifecycle.onRefused(code, message, true),
    });
  }

  #established(peer: PeerInfo): void {
    this.#greeted = true;
    // Raised only now, after authentication too: nothing bigger was read before.
    this.decoder.maxFrameBytes = this.#options.maxFrameBytes;
    const maker = peer.features?.includes(SHAPES_FEATURE) ? this.#options.shapes : undefined;
    const table = maker?.shapeDecoder();
    this.#shapes = table && { table, failure: undefined };
    this.outbox.setPeer(peer, maker);
    this.#lifecycle.onEstablished(peer);
  }

  // ---------------------------------------------------------------- FrameSink

  onHello(): void {
    throw new ProtocolError("A second HELLO");
  }

  onGoodbye(body: Uint8Array): void {
    if (body.length >= MAX_CONTROL_FRAME_BYTES) throw controlFrameError(body.length + 1);
    const goodbye = parseGoodbye(body);
    this.#lifecycle.onGoodbye(goodbye.code, goodbye.reason);
  }

  onPing(nonce: number): void {
    // Past the high-water mark the peer is not reading what is queued for it: a PONG would
    // only add to the queue (a peer flooding PINGs could grow it without bound), and the
    // frames already queued prove this side alive as well once the peer reads them.
    if (this.outbox.desiredSize > 0) this.outbox.sendPong(nonce);
  }

  onPong(): void {}

  onShape(id: number, keys: string[]): void {
    const shapes = this.#shapes?.table;
    if (shapes === undefined) {
      throw new ProtocolError(
        `A SHAPE frame (shape ${id}), but the "${SHAPES_FEATURE}" feature was not negotiated ` +
          `(both HELLOs must list it)`,
      );
    }
    try {
      shapes.define(id, keys);
    } catch (error) {
      if (error instanceof ShapeError) throw new ProtocolError(error.message, { cause: error });
      throw error;
    }
  }

  onCall(
    id: number,
    flags: number,
    timeoutMs: number,
    method: string,
    body: Uint8Array,
    meta: Uint8Array | undefined,
  ): void {
    this.#incoming.onCall(
      id,
      method,
      body,
      timeoutMs,
      (flags & CALL_FLAG_STREAM_PARAM) !== 0,
      meta && parseCallMeta(meta),
    );
  }

  onNotify(method: string, body: Uint8Array): void {
    this.#incoming.onNotify(method, body);
  }

  onResult(id: number, body: Uint8Array): void {
    this.#outgoing.onResult(id, body);
  }

  onCallError(id: number, body: Uint8Array): void {
    this.#outgoing.onCallError(id, body);
  }

  onParamError(id: number, body: Uint8Array): void {
    this.#incoming.onParamError(id, body);
  }

  onCancel(id: number, body: Uint8Array): void {
    const { reason, code } = parseCancel(body);
    this.#incoming.onCancel(id, reason, code === "deadline_exceeded");
  }

  onParamCancel(id: number): void {
    this.#outgoing.onParamCancel(id);
  }

  onResultItem(id: number, body: Uint8Array, frameBytes: number): void {
    this.#outgoing.onResultItem(id, body, frameBytes);
  }

  onParamItem(id: number, body: Uint8Array, frameBytes: number): void {
    this.#incoming.onParamItem(id, body, frameBytes);
  }

  onResultEnd(id: number): void {
    this.#outgoing.onResultEnd(id);
  }

  onParamEnd(id: number): void {
    this.#incoming.onParamEnd(id);
  }

  onParamCredit(id: number, bytes: number): void {
    this.#outgoing.onParamCredit(id, bytes);
  }

  onResultCredit(id: number, bytes: number): void {
    this.#incoming.onResultCredit(id, bytes);
  }
}

function controlFrameError(size: number): ProtocolError {
  return new ProtocolError(
    `A frame of ${size} bytes where HELLO and GOODBYE frames are at most ` +
      `${MAX_CONTROL_FRAME_BYTES} bytes`,
  );
}

// conduit's write side (docs/protocol.md §4–§8): every frame the engine sends, as a reused
// head (protocol/envelope.ts) and a body written with FrameWriter.writeParts, so a frame costs
// no buffer of its own. It owns the peer's limits and the rules of body ownership: a body
// that is a codec's scratch view is copied before anything may change it, and the caller's
// own bytes (the raw codec's) are written as they are, with a promise of when they are.
/** Room kept for the envelope fields when checking a body against the peer's limit. */
const ENVELOPE_SLACK = 32;

const EMPTY = new Uint8Array(0);
const utf8 = new TextEncoder();

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

/** What the outbox needs to know of the channel. */
export interface OutboxOptions {
  /** Whether errors sent carry their stack. */
  readonly trustPeer: boolean;
  /** Called when a write throws (the transport failed); the channel fails. */
  readonly onWriteError: (error: unknown) => void;
  /**
   * Takes back the memory of bytes given up with `transfer()` once they are written: a
   * received frame's buffer goes back to the frame decoder, for a later frame to reuse.
   */
  readonly reuse: (bytes: Uint8Array) => void;
  /** Sees each frame written (the wire trace), when the channel traces. */
  readonly onFrame?: (out: boolean, frame: Uint8Array) => void;
}

/** conduit's {@linkcode Outbox} over a FrameWriter. */
export class ConduitOutbox extends WriterOutbox implements Outbox, StreamOutbox {
  readonly streams: StreamOutbox = this;
  readonly #heads = new EnvelopeHeads();
  readonly #options: OutboxOptions;
  readonly #methodBytes = new Map<string, Uint8Array>();
  /** Until the peer's HELLO: the control frame limit. */
  #peerMaxFrame = MAX_CONTROL_FRAME_BYTES;
  /** Whether the peer's HELLO announced call meta (CALLs carry a key and attempt then). */
  #peerReadsMeta = false;
  /** This side's record shapes, once both HELLOs listed the shapes feature. */
  #shapes: ShapeEncoder | undefined;
  /** The shapes the last {@linkcode #encode} used whose definitions were never sent. */
  #lastShapes: readonly Shape[] = NO_SHAPES;
  /** Those of the call params encoded and not sent yet, by body. */
  readonly #callShapes = new WeakMap<Uint8Array, readonly Shape[]>();
  /** Settles once the stream items of the producers' own bytes queued so far are written. */
  #lentItemsWritten: Promise<void> | undefined;
  #pingNonce = 0;

  constructor(writer: FrameWriter, options: OutboxOptions) {
    super(writer, options);
    this.#options = options;
  }

  /** The peer's limits arrived; `shapes` makes the shape table when both sides read shapes. */
  setPeer(peer: PeerLimits, shapes?: ShapingCodec<unknown>): void {
    this.#peerMaxFrame = peer.maxFrameBytes;
    this.#peerReadsMeta = peer.features?.includes(CALL_META_FEATURE) ?? false;
    this.#shapes = shapes?.shapeEncoder({ maxFrameBytes: peer.maxFrameBytes });
  }

  override writable(): Promise<void> | undefined {
    return this.#lentItemsWritten ?? super.writable();
  }

  // ---------------------------------------------------------------- calls this side starts

  callParam(method: string, slot: CodecSlot, value: unknown, waits: boolean): Uint8Array {
    let body = this.#encode(slot, value);
    const size = callSize(method, body);
    if (size > this.#peerMaxFrame) throw new FrameTooLargeError(size, this.#peerMaxFrame);
    // A codec's scratch view is copied if it outlives this call: waiting in the queue, or
    // kept by the FrameWriter (`size` overestimates the frame: at worst a needless copy).
    // The caller's own bytes are not: they must stay unchanged until the call settles.
    if (
      bodyHolder(slot, value, body) === BODY_SCRATCH && (waits || this.writer.keepsBody(size))
    ) {
      body = body.slice();
    }
    // Defined when the CALL is written (sendCall), not now: it may never be.
    if (this.#lastShapes.length > 0) this.#callShapes.set(body, this.#lastShapes.slice());
    return body;
  }

  sendCall(
    id: number,
    method: string,
    streamParam: boolean,
    timeoutMs: number,
    body: Uint8Array,
    value: unknown,
    meta: CallMeta | undefined,
  ): Promise<void> | undefined {
    const name = this.#methodName(method);
    if (this.#shapes !== undefined) {
      const shapes = this.#callShapes.get(body);
      if (shapes !== undefined) {
        this.#callShapes.delete(body);
        this.#sendShapes(shapes);
      }
    }
    const flags = streamParam ? CALL_FLAG_STREAM_PARAM : 0;
    const head = meta !== undefined && this.#peerReadsMeta
      ? this.#metaHead(id, flags, timeoutMs, name, meta, body.length)
      : this.#heads.callHead(id, flags, timeoutMs, name);
    if (body !== value) {
      this.writeParts(head, body);
      return undefined;
    }
    // The caller's own bytes (body === value): written as they are, and until then the call
    // does not settle, unless the caller gave them up.
    const given = isGivenUp(body);
    if (given || !this.writer.keepsBody(callSize(method, body))) {
      this.#writeBody(head, body, given ? BODY_GIVEN : BODY_LENT);
      return undefined;
    }
    this.writeParts(head, body);
    return this.writer.flush();
  }

  sendCancel(id: number, reason: string, code: string | undefined): void {
    let body = cancelBody(reason, code);
    // Every frame fits the peer's limit: a reason too long for it is cut short.
    for (let keep = reason.length; body.length > this.#peerMaxFrame - ENVELOPE_SLACK;) {
      keep = Math.floor(keep / 2);
      body = cancelBody(`${reason.slice(0, keep)}…`, code);
    }
    this.#write(encodeIdFrame(CANCEL_R0, id, body));
  }

  sendResultCredit(id: number, bytes: number): void {
    this.writeParts(this.#heads.creditHead(CREDIT_R0, id, bytes), EMPTY);
  }

  sendParamItem(id: number, slot: CodecSlot, value: unknown): number {
    return this.#writeData(DATA_R0, id, slot, value);
  }

  sendParamEnd(id: number): void {
    this.#write(encodeIdFrame(END_R0, id, EMPTY));
  }

  sendParamError(id: number, error: unknown): void {
    this.#write(encodeIdFrame(ERROR_R0, id, this.#errorBody(id, error)));
  }

  sendNotify(method: string, slot: CodecSlot, value: unknown): void {
    const body = this.#encode(slot, value);
    const head = this.#heads.notifyHead(this.#methodName(method));
    const size = head.length + body.length;
    if (size > this.#peerMaxFrame) throw new FrameTooLargeError(size, this.#peerMaxFrame);
    this.#sendShapes(this.#lastShapes);
    this.#writeBody(head, body, bodyHolder(slot, value, body));
  }

  // ---------------------------------------------------------------- calls the peer starts

  sendResult(id: number, method: string, slot: CodecSlot, value: unknown): void {
    const body = this.#encode(slot, value);
    const head = this.#heads.id(RESULT_R1, id);
    const size = head.length + body.length;
    if (size > this.#peerMaxFrame) {
      this.sendCallFailure(id, {
        name: "FrameTooLargeError",
        message: `The result of "${method}" (${size} bytes) exceeds the caller's ` +
          `maxFrameBytes (${this.#peerMaxFrame})`,
        code: "frame_too_large",
      });
    } else {
      this.#sendShapes(this.#lastShapes);
      this.#writeBody(head, body, bodyHolder(slot, value, body));
    }
  }

  sendResultItem(id: number, slot: CodecSlot, value: unknown): number {
    return this.#writeData(DATA_R1, id, slot, value);
  }

  sendResultEnd(id: number): void {
    this.#write(encodeIdFrame(END_R1, id, EMPTY));
  }

  sendResultError(id: number, error: unknown): void {
    this.#write(encodeIdFrame(ERROR_R1, id, this.#errorBody(id, error)));
  }

  sendCallFailure(id: number, error: EngineError): void {
    const { name, message, code } = error;
    // The message may quote the peer's own method name or a codec's message: shortened to
    // fit the peer's limit, like every error.
    const body = encodeErrorBody({ name, message, code }, { maxBytes: this.#errorRoom(id) });
    this.#write(encodeIdFrame(ERROR_R1, id, body));
  }

  sendParamCredit(id: number, bytes: number): void {
    this.writeParts(this.#heads.creditHead(CREDIT_R1, id, bytes), EMPTY);
  }

  sendParamCancel(id: number): void {
    this.#write(encodeIdFrame(CANCEL_R1, id, EMPTY));
  }

  // ---------------------------------------------------------------- the connection

  /** Sends HELLO. */
  sendHello(body: Uint8Array): void {
    this.#write(encodeBodyFrame(FRAME_KINDS.hello, body));
  }

  /** Sends this side's AUTH (docs/protocol.md §5.1). */
  sendAuth(proof: Uint8Array): void {
    this.#write(encodeBodyFrame(AUTH_KIND, proof));
  }

  sendGoodbye(code?: string, reason?: string): void {
    this.#write(encodeBodyFrame(FRAME_KINDS.goodbye, goodbyeBody({ code, reason })));
  }

  sendPing(): void {
    this.#write(encodeIdFrame(FRAME_KINDS.ping, ++this.#pingNonce, EMPTY));
  }

  /** Answers a PING. */
  sendPong(nonce: number): void {
    this.#write(encodeIdFrame(FRAME_KINDS.pong, nonce, EMPTY));
  }

  // ---------------------------------------------------------------- helpers

  #write(frame: Uint8Array): void {
    this.writeParts(EMPTY, frame);
  }

  /**
   * Encodes a body, by shape when both sides read shapes and the codec can; the shapes it
   * needs defined are then in {@linkcode #lastShapes} until the next encode.
   */
  #encode(slot: CodecSlot, value: unknown): Uint8Array {
    const shapes = this.#shapes;
    if (this.#lastShapes.length > 0) this.#lastShapes = NO_SHAPES;
    const codec = slot.codec;
    const shaping = shapes === undefined ? undefined : shapingCodec(codec);
    if (shaping === undefined || (value === undefined && slot.emptyIsUndefined)) {
      return encodeBody(slot, value);
    }
    let body: Uint8Array;
    try {
      body = shaping.encodeShaped(value, shapes!);
    } catch (error) {
      throw error instanceof CodecError ? error : new CodecError(codec.name, "encode", error);
    }
    this.#lastShapes = shapes!.uncommitted();
    return body;
  }

  /**
   * Writes the SHAPE frames of the shapes a body uses that were never defined, right before
   * the body's frame (docs/protocol.md §14): a shape is known to the peer only once written.
   */
  #sendShapes(shapes: readonly Shape[]): void {
    for (let i = 0; i < shapes.length; i++) {
      const shape = shapes[i];
      if (this.#shapes!.commit(shape)) this.#write(encodeShape(shape.id, shape.keys));
    }
  }

  /**
   * Sends a frame whose body was just encoded: copied first if the writer would keep it and
   * the channel does not own it; given-up bytes are taken back once written.
   */
  #writeBody(head: Uint8Array, body: Uint8Array, holder: number): void {
    const keeps = this.writer.keepsBody(head.length + body.length);
    if (holder === BODY_GIVEN) {
      this.writeParts(head, body);
      if (!keeps) this.#takeBack(body); // copied into the batch already
      else {
        const done = (): void => this.#takeBack(body);
        this.writer.flush().then(done, done);
      }
      return;
    }
    const copy = keeps && holder !== BODY_OWNED;
    this.writeParts(head, copy ? body.slice() : body);
  }

  /** Given-up bytes are written: their mark is dropped and their memory reused if it can be. */
  #takeBack(body: Uint8Array): void {
    forgetGivenUp(body);
    this.#options.reuse(body);
  }

  /** Sends a stream item as DATA; returns its cost in credit (its payload bytes). */
  #writeData(type: number, id: number, slot: CodecSlot, value: unknown): number {
    const body = this.#encode(slot, value);
    const head = this.#heads.id(type, id);
    const size = head.length + body.length;
    if (size > this.#peerMaxFrame) throw new FrameTooLargeError(size, this.#peerMaxFrame);
    this.#sendShapes(this.#lastShapes);
    const holder = bodyHolder(slot, value, body);
    if (holder === BODY_LENT && this.writer.keepsBody(size)) {
      // The producer's own bytes, written as they are: every pump pulls its next item (after
      // which the producer may change them) only once they are written; see writable().
      this.writeParts(head, body);
      const done = (): void => {
        if (this.#lentItemsWritten === written) this.#lentItemsWritten = undefined;
      };
      const written: Promise<void> = this.writer.flush().then(done, done);
      this.#lentItemsWritten = written;
    } else {
      this.#writeBody(head, body, holder);
    }
    return size;
  }

  #errorBody(id: number, error: unknown): Uint8Array {
    return encodeErrorBody(error, {
      stack: this.#options.trustPeer,
      maxBytes: this.#errorRoom(id),
      // A stream item too big for the peer (#writeData) is reported like a too-big result.
      defaultCode: error instanceof FrameTooLargeError ? "frame_too_large" : undefined,
    });
  }

  /**
   * A CALL's head with its meta: built apart (heads with meta are rare and not cached); the
   * meta is left out where it would take the frame past the peer's limit.
   */
  #metaHead(
    id: number,
    flags: number,
    timeoutMs: number,
    name: Uint8Array,
    meta: CallMeta,
    bodyLength: number,
  ): Uint8Array {
    const bytes = callMetaBody(meta);
    const withMeta = flags | CALL_FLAG_META;
    const size = callHeadSize(id, withMeta, timeoutMs, name, bytes);
    if (size + bodyLength > this.#peerMaxFrame) {
      return this.#heads.callHead(id, flags, timeoutMs, name);
    }
    const head = new Uint8Array(size);
    writeCallHead(head, id, withMeta, timeoutMs, name, bytes);
    return head;
  }

  /** The most an ERROR body about call `id` may take: the peer's limit less its envelope. */
  #errorRoom(id: number): number {
    return this.#peerMaxFrame - 1 - varintSize(id);
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
}

const NO_SHAPES: readonly Shape[] = Object.freeze([]);

/** An upper bound of a CALL frame's size (a method name is at most 3 bytes per UTF-16 unit). */
function callSize(method: string, body: Uint8Array): number {
  return body.length + method.length * 3 + ENVELOPE_SLACK;
}
