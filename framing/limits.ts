// The framing layer's fixed sizes and default bounds.

/**
 * Bytes in a length-prefixed frame's header: the payload length as an unsigned 32-bit
 * big-endian integer.
 *
 * @example
 * ```ts
 * import { encodeFrame, FRAME_HEADER_BYTES } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * assert.equal(encodeFrame(new Uint8Array(10)).length, FRAME_HEADER_BYTES + 10);
 * ```
 */
export const FRAME_HEADER_BYTES = 4;

/**
 * The default `maxBatchBytes`, the bound on one coalesced chunk: 64 KiB.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_BATCH_BYTES } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_MAX_BATCH_BYTES, 65536);
 * ```
 */
export const DEFAULT_MAX_BATCH_BYTES: number = 64 * 1024;

/**
 * The most buffers a {@linkcode FrameDecoder} keeps for reuse from
 * {@linkcode FrameDecoder.recycle}: 4. Recycling more drops the oldest, so the pool holds the
 * sizes of the latest frames.
 *
 * @example
 * ```ts
 * import { MAX_RECYCLED_BUFFERS } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * assert.equal(MAX_RECYCLED_BUFFERS, 4);
 * ```
 */
export const MAX_RECYCLED_BUFFERS = 4;
