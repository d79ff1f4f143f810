/**
 * The frame kinds of the conduit wire format (docs/protocol.md §4): the low 7 bits of a
 * frame's type byte, and the R flag in its high bit.
 *
 * @example
 * ```ts
 * import { FRAME_KINDS, R_FLAG } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(FRAME_KINDS.result | R_FLAG, 0x92);
 * ```
 *
 * @module
 */

/**
 * The kind numbers of the frame types (the low 7 bits of the type byte).
 *
 * @example
 * ```ts
 * import { FRAME_KINDS } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(FRAME_KINDS.call, 0x10);
 * ```
 */
export const FRAME_KINDS = {
  hello: 0x01,
  goodbye: 0x02,
  ping: 0x03,
  pong: 0x04,
  call: 0x10,
  notify: 0x11,
  result: 0x12,
  error: 0x13,
  cancel: 0x14,
  data: 0x20,
  end: 0x21,
  credit: 0x22,
} as const;

/** The name of a frame kind. */
export type FrameKindName = keyof typeof FRAME_KINDS;

/**
 * The R flag of the type byte: the frame's id was allocated by the frame's receiver.
 *
 * @example
 * ```ts
 * import { FRAME_KINDS, R_FLAG } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal((FRAME_KINDS.data | R_FLAG) & 0x7f, FRAME_KINDS.data);
 * ```
 */
export const R_FLAG = 0x80;

/**
 * CALL flag bit 0: the param is a stream of DATA(R=0) frames.
 *
 * @example
 * ```ts
 * import { CALL_FLAG_STREAM_PARAM, decodeEnvelope, encodeEnvelope } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const frame = encodeEnvelope({
 *   kind: "call", id: 1, flags: CALL_FLAG_STREAM_PARAM, timeoutMs: 0, method: "m", body: new Uint8Array(0),
 * });
 * assert.equal(decodeEnvelope(frame).kind, "call");
 * ```
 */
export const CALL_FLAG_STREAM_PARAM = 1;

/**
 * The name of a type byte's kind, for messages (`"DATA(R=1)"`, `"kind 0x7f"`).
 *
 * @example
 * ```ts
 * import { describeType } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(describeType(0x92), "RESULT(R=1)");
 * assert.equal(describeType(0x7f), "kind 0x7f");
 * ```
 */
export function describeType(type: number): string {
  const kind = type & 0x7f;
  for (const [name, value] of Object.entries(FRAME_KINDS)) {
    if (value === kind) return `${name.toUpperCase()}(R=${type >= R_FLAG ? 1 : 0})`;
  }
  return `kind 0x${kind.toString(16)}`;
}
