// Codec slots: a codec plus how it treats "no value" (docs/protocol.md §4, "No value").

import type { Codec } from "../codecs/types.ts";

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

/** Encodes `value` as a body: empty for `undefined` when the codec cannot represent it. */
export function encodeValue(slot: CodecSlot, value: unknown): Uint8Array {
  if (value === undefined && slot.emptyIsUndefined) return EMPTY;
  return slot.codec.encode(value);
}

/** Decodes a body: `undefined` for an empty one when the codec cannot decode it. */
export function decodeValue(slot: CodecSlot, body: Uint8Array): unknown {
  if (body.length === 0 && slot.emptyIsUndefined) return undefined;
  return slot.codec.decode(body);
}
