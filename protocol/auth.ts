/**
 * Shared-secret authentication in the handshake (docs/protocol.md §5.1): each peer puts a
 * fresh random nonce in its HELLO and proves it holds the secret with an AUTH frame carrying
 * `HMAC-SHA-256(secret, "conduit-auth-v1" ‖ own nonce ‖ peer's nonce)`. The secret never
 * crosses the wire; a recorded handshake replayed to a peer fails, since that peer's nonce is
 * new; a peer echoing the other's nonce is refused, so a proof cannot be reflected back.
 * Pure functions (the HMAC is WebCrypto's, hence async) for peer implementers.
 *
 * @example
 * ```ts
 * import { authProof, constantTimeEqual } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const secret = new TextEncoder().encode("correct horse battery staple");
 * const a = crypto.getRandomValues(new Uint8Array(32));
 * const b = crypto.getRandomValues(new Uint8Array(32));
 * // What A sends, and what B expects from A, are the same bytes.
 * const sent = await authProof(secret, a, b);
 * assert.ok(constantTimeEqual(sent, await authProof(secret, a, b)));
 * // B's own proof differs: the nonces are in the other order.
 * assert.ok(!constantTimeEqual(sent, await authProof(secret, b, a)));
 * ```
 *
 * @module
 */

/** The kind byte of the AUTH frame: its payload is this byte and the 32-byte proof. */
export const AUTH_KIND = 0x05;
/** The one authentication method of version 1, as HELLO's `auth.method` names it. */
export const AUTH_METHOD = "hmac-sha256";
/** The length of a HELLO's nonce, in bytes (64 hex digits in the HELLO). */
export const AUTH_NONCE_BYTES = 32;
/** The length of an AUTH frame's proof: one HMAC-SHA-256. */
export const AUTH_PROOF_BYTES = 32;
/** The ASCII label every proof's message starts with. */
export const AUTH_LABEL = "conduit-auth-v1";

const LABEL = new TextEncoder().encode(AUTH_LABEL);

/**
 * The proof one peer sends in its AUTH frame, and the other expects:
 * `HMAC-SHA-256(key = secret, message = "conduit-auth-v1" ‖ senderNonce ‖ receiverNonce)`.
 *
 * @param secret The shared secret (its bytes; a string secret is its UTF-8).
 * @param senderNonce The nonce of the peer that sends the proof (from its own HELLO).
 * @param receiverNonce The nonce of the peer that checks it.
 * @returns The 32-byte proof.
 *
 * @example
 * ```ts
 * import { authProof } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const proof = await authProof(new Uint8Array([1]), new Uint8Array(32), new Uint8Array(32).fill(1));
 * assert.equal(proof.length, 32);
 * ```
 */
export async function authProof(
  secret: Uint8Array,
  senderNonce: Uint8Array,
  receiverNonce: Uint8Array,
): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey(
    "raw",
    secret as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const message = new Uint8Array(LABEL.length + senderNonce.length + receiverNonce.length);
  message.set(LABEL);
  message.set(senderNonce, LABEL.length);
  message.set(receiverNonce, LABEL.length + senderNonce.length);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, message));
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
