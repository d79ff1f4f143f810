/**
 * The conduit wire format (docs/protocol.md), pure and synchronous, with no I/O: what a peer
 * implementer needs to build and check frames. A frame's payload is an envelope (a type byte,
 * varint fields and a body) inside the length-prefixed framing of `@conduit/ipc/framing`.
 *
 * @example
 * ```ts
 * import { decodeEnvelope, encodeEnvelope, FRAME_KINDS, ProtocolError } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const frame = encodeEnvelope({ kind: "ping", nonce: 42 });
 * assert.equal(frame[0], FRAME_KINDS.ping);
 * assert.deepEqual(decodeEnvelope(frame), { kind: "ping", nonce: 42 });
 * assert.throws(() => decodeEnvelope(new Uint8Array(0)), ProtocolError);
 * ```
 *
 * @module
 */

export * from "./envelope.ts";
export * from "./format.ts";
export * from "./handshake.ts";
export { authProof, authTranscript, constantTimeEqual } from "./auth.ts";
