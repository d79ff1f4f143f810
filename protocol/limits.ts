/**
 * The fixed limits of the conduit wire format (docs/protocol.md §2–§4): what a peer must
 * check before it allocates, whatever it announces in its HELLO.
 *
 * @example
 * ```ts
 * import { MAX_CONTROL_FRAME_BYTES, MAX_METHOD_BYTES, PROTOCOL_VERSION } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(PROTOCOL_VERSION, 1);
 * assert.equal(MAX_METHOD_BYTES, 1024);
 * assert.equal(MAX_CONTROL_FRAME_BYTES, 1024);
 * ```
 *
 * @module
 */

/**
 * The protocol version this implementation speaks (the `version` of its HELLO).
 *
 * @example
 * ```ts
 * import { PROTOCOL_VERSION } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(PROTOCOL_VERSION, 1);
 * ```
 */
export const PROTOCOL_VERSION = 1;

/**
 * The longest method name, in UTF-8 bytes.
 *
 * @example
 * ```ts
 * import { MAX_METHOD_BYTES } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.ok(new TextEncoder().encode("add").length <= MAX_METHOD_BYTES);
 * ```
 */
export const MAX_METHOD_BYTES = 1024;

/**
 * HELLO and GOODBYE frames must fit in this many bytes, and no peer may announce a
 * `maxFrameBytes` below it.
 *
 * @example
 * ```ts
 * import { MAX_CONTROL_FRAME_BYTES } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(MAX_CONTROL_FRAME_BYTES, 1024);
 * ```
 */
export const MAX_CONTROL_FRAME_BYTES = 1024;

/**
 * The most bytes a varint may take on the wire.
 *
 * @example
 * ```ts
 * import { MAX_VARINT_BYTES } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(2 ** (7 * MAX_VARINT_BYTES) > Number.MAX_SAFE_INTEGER, true);
 * ```
 */
export const MAX_VARINT_BYTES = 8;
