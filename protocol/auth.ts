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

import { AUTH_LABEL, type AuthRole } from "./handshake.ts";

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
 * @param secret The shared secret (its bytes; a string secret is its UTF-8). Not checked here:
 * a side refuses one under `MIN_SECRET_BYTES` where it is configured.
 * @param role The role of the side that sends the proof.
 * @param transcript The handshake's {@linkcode authTranscript}.
 * @returns The 32-byte proof.
 *
 * @example
 * ```ts
 * import { authProof, authTranscript } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const secret = crypto.getRandomValues(new Uint8Array(32));
 * const proof = authProof(secret, "responder", authTranscript(new Uint8Array(1), new Uint8Array(1)));
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

// HMAC-SHA-256 (RFC 2104 over FIPS 180-4's SHA-256), synchronous: the handshake's proofs are
// computed as a frame is read, so that what a frame means never depends on timing (WebCrypto
// is asynchronous), and without node:crypto, whose loading would cost every process that
// imports a channel tens of milliseconds at start (bench/ab_engine.ts case `spawn`). Checked
// against RFC 4231's vectors and against WebCrypto in _sha256_test.ts.
const K = new Uint32Array([
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
]);
const INITIAL = [
  0x6a09e667,
  0xbb67ae85,
  0x3c6ef372,
  0xa54ff53a,
  0x510e527f,
  0x9b05688c,
  0x1f83d9ab,
  0x5be0cd19,
];
const BLOCK = 64;

/** SHA-256 of the bytes of `parts`, one after the other. */
export function sha256(...parts: Uint8Array[]): Uint8Array {
  const length = parts.reduce((sum, part) => sum + part.length, 0);
  // The message, a 0x80 byte, zeros, and its length in bits as 64 big-endian bits.
  const padded = new Uint8Array(Math.ceil((length + 9) / BLOCK) * BLOCK);
  let at = 0;
  for (const part of parts) {
    padded.set(part, at);
    at += part.length;
  }
  padded[length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(length / 0x2000_0000));
  view.setUint32(padded.length - 4, (length * 8) >>> 0);
  const h = Int32Array.from(INITIAL);
  const w = new Int32Array(64);
  for (let block = 0; block < padded.length; block += BLOCK) {
    for (let i = 0; i < 16; i++) w[i] = view.getInt32(block + 4 * i);
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15];
      const b = w[i - 2];
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
    }
    let [a, b, c, d, e, f, g, hh] = h;
    for (let i = 0; i < 64; i++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (hh + s1 + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  }
  const digest = new Uint8Array(32);
  const out = new DataView(digest.buffer);
  for (let i = 0; i < 8; i++) out.setInt32(4 * i, h[i]);
  return digest;
}

/** HMAC-SHA-256 with `key` of the bytes of `parts`, one after the other. */
export function hmacSha256(key: Uint8Array, ...parts: Uint8Array[]): Uint8Array {
  const block = new Uint8Array(BLOCK);
  block.set(key.length > BLOCK ? sha256(key) : key);
  const inner = block.map((byte) => byte ^ 0x36);
  const outer = block.map((byte) => byte ^ 0x5c);
  return sha256(outer, sha256(inner, ...parts));
}
