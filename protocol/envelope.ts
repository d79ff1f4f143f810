/**
 * The conduit envelope: the frame kinds of docs/protocol.md §4 to bytes and back. Pure and
 * synchronous; {@linkcode decodeEnvelope} throws {@linkcode ProtocolError} for anything the
 * protocol forbids, so a peer's bytes never crash the reader.
 *
 * @example
 * ```ts
 * import { decodeEnvelope, encodeEnvelope } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const bytes = encodeEnvelope({ kind: "credit", id: 7, receiverId: false, bytes: 4096 });
 * assert.deepEqual(bytes, new Uint8Array([0x22, 7, 0x80, 0x20]));
 * assert.deepEqual(decodeEnvelope(bytes), { kind: "credit", id: 7, receiverId: false, bytes: 4096 });
 * ```
 *
 * @module
 */

import { CALL_FLAG_META, FRAME_KINDS, R_FLAG } from "./format.ts";
import {
  encodeBodyFrame,
  encodeCall,
  encodeCredit,
  encodeIdFrame,
  encodeNotify,
  encodeShape,
  FrameParser,
  type FrameSink,
  readFrame,
} from "./_frame_table.ts";

/**
 * A decoded frame: its kind, its fields, and its body (a view into the frame).
 *
 * @example
 * ```ts
 * import { type Envelope, encodeEnvelope } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const end: Envelope = { kind: "end", id: 5, receiverId: true };
 * assert.deepEqual(encodeEnvelope(end), new Uint8Array([0xa1, 5]));
 * ```
 */
export type Envelope =
  | { kind: "hello"; body: Uint8Array }
  | { kind: "goodbye"; body: Uint8Array }
  | { kind: "ping"; nonce: number }
  | { kind: "pong"; nonce: number }
  /** The sender's record shape `id` (§14), with its keys in order. */
  | { kind: "shape"; id: number; keys: string[] }
  | {
    kind: "call";
    id: number;
    flags: number;
    timeoutMs: number;
    method: string;
    body: Uint8Array;
    /** The call's meta (§6), present exactly when flags has `CALL_FLAG_META`. */
    meta?: Uint8Array;
  }
  | { kind: "notify"; method: string; body: Uint8Array }
  | { kind: "result"; id: number; body: Uint8Array }
  | { kind: "error"; id: number; receiverId: boolean; body: Uint8Array }
  | { kind: "cancel"; id: number; receiverId: boolean; body: Uint8Array }
  | { kind: "data"; id: number; receiverId: boolean; body: Uint8Array }
  | { kind: "end"; id: number; receiverId: boolean }
  | { kind: "credit"; id: number; receiverId: boolean; bytes: number };

const EMPTY = new Uint8Array(0);
const encoder = new TextEncoder();

/**
 * Encodes one envelope as a frame payload (without the 4-byte length header, which the
 * framing layer adds). It writes what it is given, values a receiver refuses included (an id
 * of 0, an empty method), so a test peer can build invalid frames; it throws only where the
 * bytes would say something else than the envelope.
 *
 * @param envelope The frame to encode.
 * @returns A new buffer holding the frame payload.
 * @throws {RangeError} For a number no varint holds (negative, fractional, above 2^53 - 1),
 * or CALL flag META without a meta.
 * @throws {TypeError} For a method name or shape key with a lone surrogate (it has no UTF-8).
 *
 * @example
 * ```ts
 * import { encodeEnvelope } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const body = new TextEncoder().encode("3");
 * assert.deepEqual(encodeEnvelope({ kind: "result", id: 1, body }), new Uint8Array([0x92, 1, 0x33]));
 * ```
 */
export function encodeEnvelope(envelope: Envelope): Uint8Array {
  checkFields(envelope);
  switch (envelope.kind) {
    case "hello":
    case "goodbye":
      return encodeBodyFrame(FRAME_KINDS[envelope.kind], envelope.body);
    case "ping":
    case "pong":
      return encodeIdFrame(FRAME_KINDS[envelope.kind], envelope.nonce, EMPTY);
    case "shape":
      return encodeShape(envelope.id, envelope.keys);
    case "call":
      return encodeCall(
        envelope.id,
        envelope.meta === undefined ? envelope.flags : envelope.flags | CALL_FLAG_META,
        envelope.timeoutMs,
        encoder.encode(envelope.method),
        envelope.body,
        envelope.meta,
      );
    case "notify":
      return encodeNotify(encoder.encode(envelope.method), envelope.body);
    case "result":
      return encodeIdFrame(FRAME_KINDS.result | R_FLAG, envelope.id, envelope.body);
    case "error":
    case "cancel":
    case "data":
      return encodeIdFrame(
        FRAME_KINDS[envelope.kind] | (envelope.receiverId ? R_FLAG : 0),
        envelope.id,
        envelope.body,
      );
    case "end":
      return encodeIdFrame(
        FRAME_KINDS.end | (envelope.receiverId ? R_FLAG : 0),
        envelope.id,
        EMPTY,
      );
    case "credit":
      return encodeCredit(
        FRAME_KINDS.credit | (envelope.receiverId ? R_FLAG : 0),
        envelope.id,
        envelope.bytes,
      );
  }
}

/** Throws where encoding `envelope` would write other values than its own. */
function checkFields(envelope: Envelope): void {
  const fields = envelope as Partial<Record<string, unknown>>;
  for (const name of VARINT_FIELDS) {
    const value = fields[name];
    if (value !== undefined && !(Number.isSafeInteger(value) && (value as number) >= 0)) {
      throw new RangeError(
        `The ${envelope.kind} envelope's ${name} must be an integer from 0 to ` +
          `${Number.MAX_SAFE_INTEGER}, not ${value}`,
      );
    }
  }
  if (envelope.kind === "call" && (envelope.flags & CALL_FLAG_META) !== 0 && !envelope.meta) {
    throw new RangeError("A call envelope with flag META (2) needs its meta");
  }
  const names = envelope.kind === "shape"
    ? envelope.keys
    : envelope.kind === "call" || envelope.kind === "notify"
    ? [envelope.method]
    : [];
  for (const name of names) {
    if (!name.isWellFormed()) {
      throw new TypeError(
        `The ${envelope.kind} envelope's ${JSON.stringify(name)} has a lone surrogate (no UTF-8)`,
      );
    }
  }
}

/** The fields written as varints (docs/protocol.md §3). */
const VARINT_FIELDS = ["id", "nonce", "flags", "timeoutMs", "bytes"] as const;

/**
 * Decodes one frame payload into an {@linkcode Envelope}. Bodies are views into `frame`.
 *
 * @param frame One frame payload, as the framing layer returns it.
 * @returns The decoded frame.
 * @throws {ProtocolError} For an empty frame, an unknown kind, an R flag the kind does not
 * allow, a malformed varint, a missing field, trailing bytes where the kind has no body, an
 * invalid method name, an id of 0, or unknown CALL flags.
 *
 * @example
 * ```ts
 * import { decodeEnvelope, ProtocolError } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(decodeEnvelope(new Uint8Array([0xa1, 5])), { kind: "end", id: 5, receiverId: true });
 * assert.throws(() => decodeEnvelope(new Uint8Array([0x7f])), ProtocolError);
 * ```
 */
export function decodeEnvelope(frame: Uint8Array): Envelope {
  const builder = new EnvelopeBuilder();
  readFrame(frame, builder, parser);
  return builder.envelope!;
}

// Holds no state between frames but its cursor, and a read never re-enters it.
const parser = new FrameParser();

/** A sink that builds the Envelope of the frame it reads. */
class EnvelopeBuilder implements FrameSink {
  envelope: Envelope | undefined;

  onHello(body: Uint8Array): void {
    this.envelope = { kind: "hello", body };
  }
  onGoodbye(body: Uint8Array): void {
    this.envelope = { kind: "goodbye", body };
  }
  onPing(nonce: number): void {
    this.envelope = { kind: "ping", nonce };
  }
  onPong(nonce: number): void {
    this.envelope = { kind: "pong", nonce };
  }
  onShapeHead(): void {}
  onShapeKeyBytes(): void {}
  onShape(id: number, keys: string[]): void {
    this.envelope = { kind: "shape", id, keys };
  }
  onCall(
    id: number,
    flags: number,
    timeoutMs: number,
    method: string,
    body: Uint8Array,
    meta: Uint8Array | undefined,
  ): void {
    this.envelope = {
      kind: "call",
      id,
      flags,
      timeoutMs,
      method,
      body,
      ...(meta !== undefined && { meta }),
    };
  }
  onNotify(method: string, body: Uint8Array): void {
    this.envelope = { kind: "notify", method, body };
  }
  onResult(id: number, body: Uint8Array): void {
    this.envelope = { kind: "result", id, body };
  }
  onCallError(id: number, body: Uint8Array): void {
    this.envelope = { kind: "error", id, receiverId: true, body };
  }
  onParamError(id: number, body: Uint8Array): void {
    this.envelope = { kind: "error", id, receiverId: false, body };
  }
  onCancel(id: number, body: Uint8Array): void {
    this.envelope = { kind: "cancel", id, receiverId: false, body };
  }
  onParamCancel(id: number, body: Uint8Array): void {
    this.envelope = { kind: "cancel", id, receiverId: true, body };
  }
  onResultItem(id: number, body: Uint8Array): void {
    this.envelope = { kind: "data", id, receiverId: true, body };
  }
  onParamItem(id: number, body: Uint8Array): void {
    this.envelope = { kind: "data", id, receiverId: false, body };
  }
  onResultEnd(id: number): void {
    this.envelope = { kind: "end", id, receiverId: true };
  }
  onParamEnd(id: number): void {
    this.envelope = { kind: "end", id, receiverId: false };
  }
  onParamCredit(id: number, bytes: number): void {
    this.envelope = { kind: "credit", id, receiverId: true, bytes };
  }
  onResultCredit(id: number, bytes: number): void {
    this.envelope = { kind: "credit", id, receiverId: false, bytes };
  }
}
