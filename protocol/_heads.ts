// Envelope heads (docs/protocol.md §4): the type byte and varint fields before a frame's body,
// written into one reused scratch buffer. The channel sends them with
// FrameWriter.writeParts(head, body), so a frame costs no buffer of its own: allocating one
// costs far more than the frame's few head bytes (`bench/ab_engine.ts` case `notify`).

import { writeVarint } from "./_varint.ts";
import { MAX_METHOD_BYTES, MAX_VARINT_BYTES } from "./limits.ts";
import { FRAME_KINDS } from "./frame_kinds.ts";

/** The longest head: CALL with four maximal varints and the longest method name. */
const MAX_HEAD_BYTES = 1 + 4 * MAX_VARINT_BYTES + MAX_METHOD_BYTES;

/** Writes heads; each returns a view of the scratch buffer, valid until the next call. */
export class EnvelopeHeads {
  readonly #scratch = new Uint8Array(MAX_HEAD_BYTES);
  // One view per head length, made once: a subarray per frame would be the only allocation
  // left on the send path.
  readonly #views: Uint8Array[] = [];

  /** A type byte and one varint: RESULT, ERROR, CANCEL, DATA, END, PING, PONG. */
  id(type: number, id: number): Uint8Array {
    const head = this.#scratch;
    head[0] = type;
    return this.#view(writeVarint(head, 1, id));
  }

  /** A whole CREDIT frame (it has no body). */
  creditHead(type: number, id: number, bytes: number): Uint8Array {
    const head = this.#scratch;
    head[0] = type;
    return this.#view(writeVarint(head, writeVarint(head, 1, id), bytes));
  }

  /** CALL up to its body; `method` is the UTF-8 method name. */
  callHead(id: number, flags: number, timeoutMs: number, method: Uint8Array): Uint8Array {
    const head = this.#scratch;
    head[0] = FRAME_KINDS.call;
    let offset = writeVarint(head, 1, id);
    offset = writeVarint(head, offset, flags);
    offset = writeVarint(head, offset, timeoutMs);
    return this.#view(this.#method(offset, method));
  }

  /** NOTIFY up to its body; `method` is the UTF-8 method name. */
  notifyHead(method: Uint8Array): Uint8Array {
    const head = this.#scratch;
    head[0] = FRAME_KINDS.notify;
    return this.#view(this.#method(1, method));
  }

  #view(length: number): Uint8Array {
    return this.#views[length] ??= this.#scratch.subarray(0, length);
  }

  #method(offset: number, method: Uint8Array): number {
    const head = this.#scratch;
    offset = writeVarint(head, offset, method.length);
    // Method names are short: a loop beats TypedArray#set's fixed cost.
    for (let i = 0; i < method.length; i++) head[offset + i] = method[i];
    return offset + method.length;
  }
}
