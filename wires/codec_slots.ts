// Codec slots: a codec plus how it treats "no value" (docs/protocol.md §4, "No value"), and
// bodies encoded and decoded through them; and what every wire's frame writer shares (its
// target, its Outbox base).

import { CodecError } from "../errors.ts";
import type { Codec, ShapingCodec } from "../codecs/types.ts";
import { isGivenUp } from "../transfer.ts";
import type { FrameTarget, FrameWriter } from "../framing/frame_writer.ts";
import type { Transport } from "../transports/types.ts";

/** A codec and whether an empty body means `undefined` for it. */
export interface CodecSlot {
  readonly codec: Codec<unknown>;
  /** True for codecs that cannot decode an empty byte string (json, msgpack). */
  readonly emptyIsUndefined: boolean;
}

/** The codecs of one method: for its param (and param stream items) and its result. */
export interface MethodCodecs {
  readonly param: CodecSlot;
  readonly result: CodecSlot;
}

/** The body is new bytes of the channel's own (`Codec.encode`'s). */
export const BODY_OWNED = 0;
/** The body is a view of the codec's scratch memory, valid until the codec's next call. */
export const BODY_SCRATCH = 1;
/** The body is the caller's own bytes: the raw codec passes its values through. */
export const BODY_LENT = 2;
/**
 * The body is bytes the caller gave up with `transfer()`: the channel may keep them without
 * copying, and reuse their memory once written (see ConduitOutbox).
 */
export const BODY_GIVEN = 3;

/**
 * Who holds `body`, which {@linkcode encodeBody} just made of `value` with `slot`:
 * {@linkcode BODY_OWNED}, {@linkcode BODY_SCRATCH}, {@linkcode BODY_LENT} or
 * {@linkcode BODY_GIVEN}. The channel can keep the first and last kinds as long as it likes;
 * it must copy the others before they change.
 */
export function bodyHolder(slot: CodecSlot, value: unknown, body: Uint8Array): number {
  if (body === value) return isGivenUp(body) ? BODY_GIVEN : BODY_LENT;
  return slot.codec.encodeView !== undefined && body.length > 0 ? BODY_SCRATCH : BODY_OWNED;
}

/** `codec` as a {@linkcode ShapingCodec} when it can send records by shape, else undefined. */
export function shapingCodec(codec: Codec<unknown>): ShapingCodec<unknown> | undefined {
  const shaping = codec as Partial<ShapingCodec<unknown>>;
  return typeof shaping.encodeShaped === "function" &&
      typeof shaping.decodeShaped === "function" &&
      typeof shaping.shapeEncoder === "function" && typeof shaping.shapeDecoder === "function"
    ? codec as ShapingCodec<unknown>
    : undefined;
}

const EMPTY = new Uint8Array(0);
const slots = new WeakMap<Codec<unknown>, CodecSlot>();

/** The slot for `codec`, probing once whether it can decode an empty body. */
export function codecSlot(codec: Codec<unknown>): CodecSlot {
  let slot = slots.get(codec);
  if (slot === undefined) {
    let emptyIsUndefined = false;
    try {
      codec.decode(EMPTY);
    } catch {
      emptyIsUndefined = true;
    }
    slot = { codec, emptyIsUndefined };
    slots.set(codec, slot);
  }
  return slot;
}

/**
 * Encodes `value` as a body (empty for `undefined` when the codec cannot represent it), with
 * the codec's `encodeView` when it has one (see {@linkcode bodyHolder}).
 *
 * @throws {CodecError} When the codec cannot encode `value` (any other error it throws
 * becomes the cause).
 */
export function encodeBody(slot: CodecSlot, value: unknown): Uint8Array {
  if (value === undefined && slot.emptyIsUndefined) return EMPTY;
  const codec = slot.codec;
  const view = codec.encodeView !== undefined;
  let body: Uint8Array;
  try {
    body = view ? codec.encodeView!(value) : codec.encode(value);
  } catch (error) {
    throw error instanceof CodecError ? error : new CodecError(codec.name, "encode", error);
  }
  return body;
}

/**
 * Decodes a body: `undefined` for an empty one when the codec cannot decode it.
 *
 * @throws {CodecError} When the codec cannot decode `body`.
 */
export function decodeBody(slot: CodecSlot, body: Uint8Array): unknown {
  if (body.length === 0 && slot.emptyIsUndefined) return undefined;
  try {
    return slot.codec.decode(body);
  } catch (error) {
    throw error instanceof CodecError ? error : new CodecError(slot.codec.name, "decode", error);
  }
}

/**
 * What a wire's frame writer writes to: the transport itself when it takes chunks
 * (`writeChunk` and `closeWrite`), so its Web Streams are never created; else its `writable`.
 */
export function writeTarget(transport: Transport): FrameTarget | WritableStream<Uint8Array> {
  return takesChunks(transport) ? transport : transport.writable;
}

function takesChunks(transport: Transport): transport is Transport & FrameTarget {
  return transport.writeChunk !== undefined && transport.closeWrite !== undefined;
}

// What every Outbox over a FrameWriter shares, whatever its wire: backpressure and the
// writer's lifecycle. Each wire's outbox extends it with its own frames.
/** The FrameWriter side of an Outbox: backpressure, flush, close and abort. */
export abstract class WriterOutbox {
  protected readonly writer: FrameWriter;
  readonly #hooks: WriterHooks;

  constructor(writer: FrameWriter, hooks: WriterHooks) {
    this.writer = writer;
    this.#hooks = hooks;
  }

  /** Sends one frame: `head` (copied at once, so a scratch view will do), then `body`. */
  protected writeParts(head: Uint8Array, body: Uint8Array): void {
    const onFrame = this.#hooks.onFrame;
    if (onFrame !== undefined) {
      const frame = new Uint8Array(head.length + body.length);
      frame.set(head);
      frame.set(body, head.length);
      onFrame(true, frame);
    }
    try {
      this.writer.writeParts(head, body);
    } catch (error) {
      this.#hooks.onWriteError(error);
    }
  }

  get desiredSize(): number {
    return this.writer.desiredSize;
  }

  get bytesWritten(): number {
    return this.writer.bytesWritten;
  }

  get ready(): Promise<void> {
    return this.writer.ready;
  }

  writable(): Promise<void> | undefined {
    return this.writer.desiredSize > 0 ? undefined : this.writer.ready;
  }

  writeQueued(): void {
    this.writer.writeQueued();
  }

  flush(): Promise<void> {
    return this.writer.flush();
  }

  close(): Promise<void> {
    return this.writer.close();
  }

  abort(): Promise<void> {
    return this.writer.abort();
  }
}

/** A body as the channel codec reads it, for a trace line. */
export type TraceRender = (body: Uint8Array) => string;

/** What an outbox tells its wire about its writes. */
export interface WriterHooks {
  /** A write threw (the transport failed): the channel fails. */
  readonly onWriteError: (error: unknown) => void;
  /** Sees each frame written (the wire trace), when the channel traces. */
  readonly onFrame?: ((out: boolean, frame: Uint8Array) => void) | undefined;
}

/** What turns a channel's frames into trace lines (each wire has its own formatter). */
export interface FrameTracer {
  /** One frame, `out` when this side sent it, `at` the `performance.now()` it was seen. */
  frame(out: boolean, frame: Uint8Array, at: number): void;
}

/**
 * Feeds frames to a wire trace, loading the wire's formatter (`load`) at once: frames seen
 * before it is there (the HELLO) are copied and kept until it is. `loaded` settles then.
 */
export function traceFeed(
  trace: { readonly sink: (line: string) => void; readonly render: TraceRender },
  load: () => Promise<new (sink: (line: string) => void, render: TraceRender) => FrameTracer>,
): { feed: (out: boolean, frame: Uint8Array) => void; loaded: Promise<void> } {
  let tracer: FrameTracer | undefined;
  const pending: [boolean, Uint8Array, number][] = [];
  const loaded = load().then((Tracer) => {
    tracer = new Tracer(trace.sink, trace.render);
    for (const [out, frame, at] of pending.splice(0)) tracer.frame(out, frame, at);
  });
  const feed = (out: boolean, frame: Uint8Array): void => {
    const at = performance.now();
    if (tracer !== undefined) tracer.frame(out, frame, at);
    else pending.push([out, frame.slice(), at]);
  };
  return { feed, loaded };
}
