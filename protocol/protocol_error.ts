/**
 * The error for bytes the wire protocol forbids.
 *
 * @example
 * ```ts
 * import { decodeEnvelope, ProtocolError } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.throws(() => decodeEnvelope(new Uint8Array([0x7f])), ProtocolError);
 * ```
 *
 * @module
 */

import { ConduitError } from "../errors.ts";

export { ConduitError };

/**
 * The peer sent something the protocol forbids (a malformed or unknown frame, an id it never
 * issued, a result twice, a stream item after its end, a frame too large). The connection is
 * closed; pending calls fail with a `ConnectionClosedError` whose `cause` is this.
 *
 * @example
 * ```ts
 * import { ProtocolError } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * assert.equal(new ProtocolError("unknown frame kind 0x7f").name, "ProtocolError");
 * ```
 */
export class ProtocolError extends ConduitError {}
