// conduit's write side (docs/protocol.md §4–§8): every frame the engine sends, as a reused
// head (protocol/envelope.ts) and a body written with FrameWriter.writeParts, so a frame costs
// no buffer of its own. It owns the peer's limits and the rules of body ownership: a body
// that is a codec's scratch view is copied before anything may change it, and the caller's
// own bytes (the raw codec's) are written as they are, with a promise of when they are.

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
  R_FLAG,
} from "../../protocol/format.ts";
import {
  callHeadSize,
  cancelBody,
  encodeBodyFrame,
  encodeIdFrame,
  encodeShape,
  EnvelopeHeads,
  varintSize,
  writeCallHead,
} from "../../protocol/_frame_table.ts";
import type { FrameWriter } from "../../framing/frame_writer.ts";
import { goodbyeBody } from "../../protocol/handshake.ts";
import {
  BODY_GIVEN,
  BODY_LENT,
  BODY_OWNED,
  BODY_SCRATCH,
  bodyHolder,
  type CodecSlot,
  encodeBody,
  shapingCodec,
  WriterOutbox,
} from "../codec_slots.ts";
import type { EngineError, Outbox, PeerLimits, StreamOutbox } from "../types.ts";
import { encodeErrorBody } from "../error_codec.ts";
import { CodecError, FrameTooLargeError } from "../../errors.ts";
import type {
  RecordShape as Shape,
  ShapeEncoderTable as ShapeEncoder,
  ShapingCodec,
} from "../../codecs/types.ts";
import { forgetGivenUp, isGivenUp } from "../../transfer.ts";

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

  checkStreamCall(method: string): void {
    this.#methodName(method);
  }

  callParam(method: string, slot: CodecSlot, value: unknown, waits: boolean): Uint8Array {
    // A name no CALL may carry fails its call here, before it is queued: sendCall has no call
    // to fail.
    this.#methodName(method);
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
    // Every frame fits the peer's limit: a reason too long for it is cut short.
    this.#write(encodeIdFrame(CANCEL_R0, id, cancelBody(reason, code, this.#errorRoom(id))));
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

  /**
   * The most an ERROR or CANCEL body about call `id` may take: the peer's limit less its
   * envelope.
   */
  #errorRoom(id: number): number {
    return this.#peerMaxFrame - 1 - varintSize(id);
  }

  #methodName(method: string): Uint8Array {
    let bytes = this.#methodBytes.get(method);
    if (bytes === undefined) {
      // A lone surrogate has no UTF-8: TextEncoder would send U+FFFD, another name.
      if (!method.isWellFormed()) {
        throw new TypeError(
          `Method name ${JSON.stringify(method)} has a lone surrogate (it has no UTF-8)`,
        );
      }
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
