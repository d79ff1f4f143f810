// conduit's write side (docs/protocol.md §4–§8): every frame the engine sends, as a reused
// head (protocol/_heads.ts) and a body written with FrameWriter.writeParts, so a frame costs
// no buffer of its own. It owns the peer's limits and the rules of body ownership: a body
// that is a codec's scratch view is copied before anything may change it, and the caller's
// own bytes (the raw codec's) are written as they are, with a promise of when they are.

import { WriterOutbox } from "../writer_outbox.ts";
import { AUTH_KIND } from "../../protocol/auth.ts";
import { FrameTooLargeError } from "../../errors.ts";
import type { FrameWriter } from "../../framing/frame_writer.ts";
import {
  callHeadSize,
  encodeBodyFrame,
  encodeIdFrame,
  writeCallHead,
} from "../../protocol/_encode.ts";
import {
  CALL_FLAG_META,
  CALL_META_FEATURE,
  type CallMeta,
  callMetaBody,
} from "../../protocol/call_meta.ts";
import { EnvelopeHeads } from "../../protocol/_heads.ts";
import { varintSize } from "../../protocol/_varint.ts";
import { cancelBody } from "../../protocol/_json.ts";
import { CALL_FLAG_STREAM_PARAM, FRAME_KINDS, R_FLAG } from "../../protocol/frame_kinds.ts";
import { goodbyeBody } from "../../protocol/handshake.ts";
import { MAX_CONTROL_FRAME_BYTES, MAX_METHOD_BYTES } from "../../protocol/limits.ts";
import {
  BODY_GIVEN,
  BODY_LENT,
  BODY_OWNED,
  BODY_SCRATCH,
  bodyHolder,
  encodeBody,
} from "../codec_slots.ts";
import { forgetGivenUp, isGivenUp } from "../../_transfer_marks.ts";
import type { CodecSlot, EngineError, Outbox, PeerLimits, StreamOutbox } from "../types.ts";
import { encodeErrorBody } from "../error_codec.ts";

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
  /** Settles once the stream items of the producers' own bytes queued so far are written. */
  #lentItemsWritten: Promise<void> | undefined;
  #pingNonce = 0;

  constructor(writer: FrameWriter, options: OutboxOptions) {
    super(writer);
    this.#options = options;
  }

  /** The peer's limits arrived. */
  setPeer(peer: PeerLimits): void {
    this.#peerMaxFrame = peer.maxFrameBytes;
    this.#peerReadsMeta = peer.features?.includes(CALL_META_FEATURE) ?? false;
  }

  override writable(): Promise<void> | undefined {
    return this.#lentItemsWritten ?? super.writable();
  }

  // ---------------------------------------------------------------- calls this side starts

  callParam(method: string, slot: CodecSlot, value: unknown, waits: boolean): Uint8Array {
    const body = encodeBody(slot, value);
    const size = callSize(method, body);
    if (size > this.#peerMaxFrame) throw new FrameTooLargeError(size, this.#peerMaxFrame);
    // A codec's scratch view is copied if it outlives this call: waiting in the queue, or
    // kept by the FrameWriter (`size` overestimates the frame: at worst a needless copy).
    // The caller's own bytes are not: they must stay unchanged until the call settles.
    if (
      bodyHolder(slot, value, body) === BODY_SCRATCH && (waits || this.writer.keepsBody(size))
    ) {
      return body.slice();
    }
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
    const flags = streamParam ? CALL_FLAG_STREAM_PARAM : 0;
    const head = meta !== undefined && this.#peerReadsMeta
      ? this.#metaHead(id, flags, timeoutMs, name, meta, body.length)
      : this.#heads.callHead(id, flags, timeoutMs, name);
    if (body !== value) {
      this.#writeParts(head, body);
      return undefined;
    }
    // The caller's own bytes (body === value): written as they are, and until then the call
    // does not settle, unless the caller gave them up.
    const given = isGivenUp(body);
    if (given || !this.writer.keepsBody(callSize(method, body))) {
      this.#writeBody(head, body, given ? BODY_GIVEN : BODY_LENT);
      return undefined;
    }
    this.#writeParts(head, body);
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
    this.#writeParts(this.#heads.creditHead(CREDIT_R0, id, bytes), EMPTY);
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
    const body = encodeBody(slot, value);
    const head = this.#heads.notifyHead(this.#methodName(method));
    const size = head.length + body.length;
    if (size > this.#peerMaxFrame) throw new FrameTooLargeError(size, this.#peerMaxFrame);
    this.#writeBody(head, body, bodyHolder(slot, value, body));
  }

  // ---------------------------------------------------------------- calls the peer starts

  sendResult(id: number, method: string, slot: CodecSlot, value: unknown): void {
    const body = encodeBody(slot, value);
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
    this.#writeParts(this.#heads.creditHead(CREDIT_R1, id, bytes), EMPTY);
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
    this.#writeParts(EMPTY, frame);
  }

  /** Sends one frame: `head` (copied at once, so a scratch view will do), then `body`. */
  #writeParts(head: Uint8Array, body: Uint8Array): void {
    try {
      this.writer.writeParts(head, body);
    } catch (error) {
      this.#options.onWriteError(error);
    }
  }

  /**
   * Sends a frame whose body was just encoded: copied first if the writer would keep it and
   * the channel does not own it; given-up bytes are taken back once written.
   */
  #writeBody(head: Uint8Array, body: Uint8Array, holder: number): void {
    const keeps = this.writer.keepsBody(head.length + body.length);
    if (holder === BODY_GIVEN) {
      this.#writeParts(head, body);
      if (!keeps) this.#takeBack(body); // copied into the batch already
      else {
        const done = (): void => this.#takeBack(body);
        this.writer.flush().then(done, done);
      }
      return;
    }
    const copy = keeps && holder !== BODY_OWNED;
    this.#writeParts(head, copy ? body.slice() : body);
  }

  /** Given-up bytes are written: their mark is dropped and their memory reused if it can be. */
  #takeBack(body: Uint8Array): void {
    forgetGivenUp(body);
    this.#options.reuse(body);
  }

  /** Sends a stream item as DATA; returns its cost in credit (its payload bytes). */
  #writeData(type: number, id: number, slot: CodecSlot, value: unknown): number {
    const body = encodeBody(slot, value);
    const head = this.#heads.id(type, id);
    const size = head.length + body.length;
    if (size > this.#peerMaxFrame) throw new FrameTooLargeError(size, this.#peerMaxFrame);
    const holder = bodyHolder(slot, value, body);
    if (holder === BODY_LENT && this.writer.keepsBody(size)) {
      // The producer's own bytes, written as they are: every pump pulls its next item (after
      // which the producer may change them) only once they are written; see writable().
      this.#writeParts(head, body);
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

/** An upper bound of a CALL frame's size (a method name is at most 3 bytes per UTF-16 unit). */
function callSize(method: string, body: Uint8Array): number {
  return body.length + method.length * 3 + ENVELOPE_SLACK;
}
