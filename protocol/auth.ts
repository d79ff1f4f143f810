/**
 * Shared-secret authentication in the handshake (docs/protocol.md §5.1). The side that opened
 * the connection (the initiator) and the side that accepted it (the responder) each prove they
 * hold the secret with an HMAC-SHA-256 bound to their role and to the handshake's transcript,
 * both HELLO bodies as sent; the responder checks the initiator's proof before it sends its
 * own. So a proof cannot be reflected (to another connection or back), replayed (the other
 * side's nonce is fresh) or kept across an altered HELLO. Synchronous pure functions for peer
 * implementers (the HMAC is conduit's own, checked against RFC 4231 and WebCrypto).
 *
 * @example
 * ```ts
 * import { authProof, authTranscript, constantTimeEqual } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const secret = new TextEncoder().encode("correct horse battery staple");
 * const transcript = authTranscript(
 *   new TextEncoder().encode('{"the initiator\'s HELLO":1}'),
 *   new TextEncoder().encode('{"the responder\'s HELLO":1}'),
 * );
 * const initiator = authProof(secret, "initiator", transcript);
 * // What the initiator sends is what the responder expects of it; the roles never match.
 * assert.ok(constantTimeEqual(initiator, authProof(secret, "initiator", transcript)));
 * assert.ok(!constantTimeEqual(initiator, authProof(secret, "responder", transcript)));
 * ```
 *
 * @module
 */

import { hmacSha256 } from "./_sha256.ts";

/** The kind byte of the AUTH frame: its payload is this byte and the 32-byte proof. */
export const AUTH_KIND = 0x05;
/** The authentication method HELLO's `auth.method` names (docs/protocol.md §5.1). */
export const AUTH_METHOD = "hmac-sha256-v2";
/**
 * The method of conduit's first handshake, refused by name: its proofs were bound to neither
 * role nor transcript, so a peer without the secret could have them signed for it.
 */
export const RETIRED_AUTH_METHOD = "hmac-sha256";
/** The length of a HELLO's nonce, in bytes (64 hex digits in the HELLO). */
export const AUTH_NONCE_BYTES = 32;
/** The length of an AUTH frame's proof: one HMAC-SHA-256. */
export const AUTH_PROOF_BYTES = 32;
/** The ASCII label every proof's message starts with. */
export const AUTH_LABEL = "conduit-auth-v2";

/**
 * A side's role in the handshake: the `initiator` opened the connection and proves itself
 * first; the `responder` accepted it and answers only a proof it checked.
 */
export type AuthRole = "initiator" | "responder";

const utf8 = new TextEncoder();
const LABELS: Record<AuthRole, Uint8Array> = {
  initiator: utf8.encode(`${AUTH_LABEL}\0initiator\0`),
  responder: utf8.encode(`${AUTH_LABEL}\0responder\0`),
};

/**
 * The handshake's transcript: each HELLO body as sent, behind its length as two big-endian
 * bytes, the initiator's first.
 *
 * @param initiatorHello The initiator's HELLO body (the frame's payload after its kind byte).
 * @param responderHello The responder's HELLO body.
 * @returns The transcript both proofs sign.
 * @throws {RangeError} When a body is 65,536 bytes or more (a HELLO is at most 1,023).
 *
 * @example
 * ```ts
 * import { authTranscript } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const transcript = authTranscript(new Uint8Array([7]), new Uint8Array([8, 9]));
 * assert.deepEqual(transcript, new Uint8Array([0, 1, 7, 0, 2, 8, 9]));
 * ```
 */
export function authTranscript(initiatorHello: Uint8Array, responderHello: Uint8Array): Uint8Array {
  const transcript = new Uint8Array(4 + initiatorHello.length + responderHello.length);
  let at = 0;
  for (const hello of [initiatorHello, responderHello]) {
    if (hello.length > 0xffff) throw new RangeError(`A HELLO body of ${hello.length} bytes`);
    transcript[at] = hello.length >> 8;
    transcript[at + 1] = hello.length & 0xff;
    transcript.set(hello, at + 2);
    at += 2 + hello.length;
  }
  return transcript;
}

/**
 * The proof a side of `role` sends in its AUTH frame, and the other side expects of it:
 * `HMAC-SHA-256(key = secret, message = "conduit-auth-v2" ‖ 0x00 ‖ role ‖ 0x00 ‖ transcript)`.
 *
 * @param secret The shared secret (its bytes; a string secret is its UTF-8).
 * @param role The role of the side that sends the proof.
 * @param transcript The handshake's {@linkcode authTranscript}.
 * @returns The 32-byte proof.
 *
 * @example
 * ```ts
 * import { authProof, authTranscript } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const proof = authProof(new Uint8Array([1]), "responder", authTranscript(new Uint8Array(1), new Uint8Array(1)));
 * assert.equal(proof.length, 32);
 * ```
 */
export function authProof(secret: Uint8Array, role: AuthRole, transcript: Uint8Array): Uint8Array {
  return hmacSha256(secret, LABELS[role], transcript);
}

/**
 * Compares two byte strings in time that depends on their length only, not on where they
 * differ: a proof checked this way tells an attacker nothing byte by byte.
 *
 * @param a One byte string.
 * @param b The other.
 * @returns Whether they are equal.
 *
 * @example
 * ```ts
 * import { constantTimeEqual } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.ok(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2])));
 * assert.ok(!constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 3])));
 * assert.ok(!constantTimeEqual(new Uint8Array([1]), new Uint8Array([1, 2])));
 * ```
 */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/**
 * The lowercase hex form of a nonce, as HELLO's `auth.nonce` carries it.
 *
 * @param bytes The nonce.
 * @returns Two hex digits per byte.
 *
 * @example
 * ```ts
 * import { toHex } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(toHex(new Uint8Array([0, 255])), "00ff");
 * ```
 */
export function toHex(bytes: Uint8Array): string {
  let hex = "";
  for (const byte of bytes) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/**
 * Reads a nonce from HELLO's `auth.nonce`: exactly 64 lowercase hex digits.
 *
 * @param hex The field's value.
 * @returns The 32 bytes, or undefined when the value is not such a string.
 *
 * @example
 * ```ts
 * import { parseNonce } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(parseNonce("00".repeat(32))?.length, 32);
 * assert.equal(parseNonce("xyz"), undefined);
 * assert.equal(parseNonce("AB".repeat(32)), undefined); // uppercase is not the form
 * ```
 */
export function parseNonce(hex: unknown): Uint8Array | undefined {
  if (typeof hex !== "string" || !/^[0-9a-f]{64}$/.test(hex)) return undefined;
  const bytes = new Uint8Array(AUTH_NONCE_BYTES);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}
