// conduit's own wire protocol (docs/protocol.md) behind the engine's seam (../types.ts), its
// read side: the length-prefixed framing, the HELLO handshake, and each frame turned into an
// engine event through protocol/'s one table of frame readers, which parses fields in place and
// matches recent method names by their bytes, so a common frame costs no allocation to read.
// What the engine sends goes through the write side, outbox.ts.

import {
  AUTH_KIND,
  CALL_FLAG_STREAM_PARAM,
  CALL_META_FEATURE,
  describeType,
  FRAME_KINDS,
  MAX_CONTROL_FRAME_BYTES,
  parseCallMeta,
  ProtocolError,
  SHAPES_FEATURE,
} from "../../protocol/format.ts";
import { FrameDecoder, FrameReader } from "../../framing/frame_decoder.ts";
import {
  bodyStart,
  FrameParser,
  type FrameSink,
  MethodNames,
  parseCancel,
  readFrame,
} from "../../protocol/_frame_table.ts";
import { FrameWriter } from "../../framing/frame_writer.ts";
import {
  AUTH_NONCE_BYTES,
  helloBody,
  parseGoodbye,
  parseHello,
  type PeerInfo,
} from "../../protocol/handshake.ts";
import type { Transport } from "../../transports/types.ts";
import {
  type CodecSlot,
  decodeBody,
  shapingCodec,
  traceFeed,
  writeTarget,
} from "../codec_slots.ts";
import type { ConduitAuth } from "./auth.ts";
import { ConduitOutbox } from "./outbox.ts";
import type {
  EventNames,
  IncomingEvents,
  LifecycleEvents,
  OutgoingEvents,
  Wire,
  WireEvents,
  WireFactory,
  WireOptions,
} from "../types.ts";
import { decodeErrorBody } from "../error_codec.ts";
import { CodecError, ShapeError } from "../../errors.ts";
import type { ShapeDecoderTable as ShapeDecoder } from "../../codecs/types.ts";

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
    const type = frame[0];
    if (this.#auth?.waiting && type !== FRAME_KINDS.goodbye) return this.#auth.onFrame(frame);
    // HELLO and GOODBYE have no fields: their body is all after the type byte.
    const body = frame.subarray(1);
    if (type === FRAME_KINDS.goodbye) {
      const goodbye = parseGoodbye(body);
      this.#lifecycle.onRefused(
        goodbye.code ?? "closed",
        `The peer refused the handshake${goodbye.code ? ` (${goodbye.code})` : ""}: ${
          goodbye.reason ?? "no reason given"
        }`,
        false,
      );
      return;
    }
    if (type !== FRAME_KINDS.hello) {
      // Named as is: the frame table would name an AUTH as one after the handshake.
      const kind = type === AUTH_KIND ? "AUTH" : describeType(type).replace("(R=0)", "");
      throw new ProtocolError(`The first frame was ${kind}, not HELLO`);
    }
    const outcome = parseHello(body, this.#options.codec);
    if (!outcome.ok) return this.#lifecycle.onRefused(outcome.code, outcome.message, true);
    const peer = outcome.peer;
    const auth = this.#auth;
    if (auth === undefined) {
      if (outcome.auth === undefined) return void this.#established(peer);
      return this.#lifecycle.onRefused(
        "auth_required",
        "The peer requires authentication and this side has no shared secret (the auth option)",
        true,
      );
    }
    auth.start(outcome.auth, { own: this.#hello, peer: body }, {
      sendAuth: (proof) => this.outbox.sendAuth(proof),
      onEstablished: () => this.#established(peer),
      onRefused: (code, message) => this.#lifecycle.onRefused(code, message, true),
    });
  }

  #established(peer: PeerInfo): boolean {
    this.#greeted = true;
    // Raised only now, after authentication too: nothing bigger was read before.
    this.decoder.maxFrameBytes = this.#options.maxFrameBytes;
    const maker = peer.features?.includes(SHAPES_FEATURE) ? this.#options.shapes : undefined;
    const table = maker?.shapeDecoder();
    this.#shapes = table && { table, failure: undefined };
    this.outbox.setPeer(peer, maker);
    return this.#lifecycle.onEstablished(peer);
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

  onShapeHead(id: number, count: number): void {
    const shapes = this.#shapes?.table;
    if (shapes === undefined) {
      throw new ProtocolError(
        `A SHAPE frame (shape ${id}), but the "${SHAPES_FEATURE}" feature was not negotiated ` +
          `(both HELLOs must list it)`,
      );
    }
    shapeProtocolError(() => shapes.checkKeyCount?.(id, count));
  }

  onShapeKeyBytes(id: number, count: number, longestKeyBytes: number): void {
    shapeProtocolError(() => this.#shapes!.table.checkKeyCount?.(id, count, longestKeyBytes));
  }

  onShape(id: number, keys: string[]): void {
    shapeProtocolError(() => this.#shapes!.table.define(id, keys));
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

/** Runs `check` of the shape table: a ShapeError it throws is the peer's protocol error. */
function shapeProtocolError(check: () => void): void {
  try {
    check();
  } catch (error) {
    if (error instanceof ShapeError) throw new ProtocolError(error.message, { cause: error });
    throw error;
  }
}
