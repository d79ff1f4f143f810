/**
 * The bodies of the control frames (docs/protocol.md §2, §10): HELLO, whose JSON announces
 * a peer's codec and limits, and GOODBYE, whose JSON names why a peer closes. Pure functions:
 * a peer implementer builds and checks them without a connection.
 *
 * @example
 * ```ts
 * import { helloBody, parseHello } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const body = helloBody({ codec: "json", maxFrameBytes: 65536, maxInFlight: 8, streamWindowBytes: 4096 });
 * const outcome = parseHello(body, "json");
 * assert.ok(outcome.ok);
 * assert.equal(outcome.peer.maxInFlight, 8);
 * ```
 *
 * @module
 */

import { MAX_CONTROL_FRAME_BYTES, PROTOCOL_VERSION } from "./format.ts";
import { parseJson } from "./_frame_table.ts";
import { fittedText } from "../_utf8.ts";

/**
 * The peer's HELLO: its codec and limits.
 *
 * @example
 * ```ts
 * import { helloBody, parseHello, type PeerInfo } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const outcome = parseHello(
 *   helloBody({ codec: "raw", maxFrameBytes: 4096, maxInFlight: 1, streamWindowBytes: 1 }),
 *   "raw",
 * );
 * const peer: PeerInfo | undefined = outcome.ok ? outcome.peer : undefined;
 * assert.equal(peer?.codec, "raw");
 * ```
 */
export interface PeerInfo {
  /** The protocol version the peer speaks. */
  readonly version: number;
  /** The peer's channel codec name. */
  readonly codec: string;
  /** The largest frame payload the peer accepts. */
  readonly maxFrameBytes: number;
  /** How many of this side's calls the peer handles at once. */
  readonly maxInFlight: number;
  /** The credit the peer grants to each stream it receives. */
  readonly streamWindowBytes: number;
  /** The extensions the peer understands. */
  readonly features: readonly string[];
}

/**
 * HELLO's `auth` field: the peer requires authentication by `method`, with its `nonce`, in
 * its `role`.
 */
export interface HelloAuth {
  /** The method: `"hmac-sha256-v2"`. */
  readonly method: string;
  /** The peer's nonce; undefined when its HELLO's was not 64 lowercase hex digits. */
  readonly nonce: Uint8Array | undefined;
  /** The peer's role; undefined when its HELLO's was neither `initiator` nor `responder`. */
  readonly role: AuthRole | undefined;
}

/** What this side announces in its HELLO (see {@linkcode helloBody}). */
export interface HelloOptions {
  /** The channel codec's name. */
  codec: string;
  /** The largest frame payload this side accepts. */
  maxFrameBytes: number;
  /** How many of the peer's calls this side handles at once. */
  maxInFlight: number;
  /** The credit this side grants to each stream it receives. */
  streamWindowBytes: number;
  /** The extensions this side understands (docs/protocol.md §11). @default {[]} */
  features?: readonly string[];
  /** This side's nonce and role, when it requires authentication (docs/protocol.md §5.1). */
  auth?: { readonly nonce: Uint8Array; readonly role: AuthRole };
}

/**
 * The outcome of {@linkcode parseHello}: the peer, or the GOODBYE code and message to refuse
 * it with.
 */
export type HelloOutcome =
  | {
    readonly ok: true;
    readonly peer: PeerInfo;
    /** The authentication the peer asks for (docs/protocol.md §5.1); absent when none. */
    readonly auth?: HelloAuth;
  }
  | { readonly ok: false; readonly code: string; readonly message: string };

/** Why a peer closes: a GOODBYE body (both fields absent for a graceful close). */
export interface Goodbye {
  /** The failure, e.g. `"protocol_error"`; absent for a graceful close. */
  readonly code?: string;
  /** Words for a human. */
  readonly reason?: string;
}

const utf8 = new TextEncoder();
/** The longest GOODBYE reason sent, in UTF-16 code units: the frame stays under its limit. */
const MAX_REASON_LENGTH = 600;

/**
 * The HELLO body this side sends: the protocol name and version, its codec and limits.
 *
 * @param options The codec name and limits to announce.
 * @returns The JSON body, UTF-8.
 *
 * @example
 * ```ts
 * import { helloBody } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const hello = JSON.parse(new TextDecoder().decode(
 *   helloBody({ codec: "json", maxFrameBytes: 1024, maxInFlight: 1, streamWindowBytes: 1 }),
 * ));
 * assert.equal(hello.protocol, "conduit");
 * assert.equal(hello.version, 1);
 * ```
 */
export function helloBody(options: HelloOptions): Uint8Array {
  return utf8.encode(JSON.stringify({
    protocol: "conduit",
    version: PROTOCOL_VERSION,
    codec: options.codec,
    maxFrameBytes: options.maxFrameBytes,
    maxInFlight: options.maxInFlight,
    streamWindowBytes: options.streamWindowBytes,
    features: options.features ?? [],
    ...(options.auth && {
      auth: { method: AUTH_METHOD, nonce: toHex(options.auth.nonce), role: options.auth.role },
    }),
  }));
}

/**
 * Checks the peer's HELLO body against this side: the protocol, the version and the codec
 * must match, the limits must be integers in range (`maxFrameBytes` is capped at 2^32 - 1).
 *
 * @param body The HELLO frame's body.
 * @param codec This side's codec name.
 * @returns The peer, or the GOODBYE code (`protocol_mismatch`, `version_mismatch`,
 * `codec_mismatch`, `invalid_hello`) and a message naming both values.
 *
 * @example
 * ```ts
 * import { helloBody, parseHello } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const outcome = parseHello(
 *   helloBody({ codec: "msgpack", maxFrameBytes: 1024, maxInFlight: 1, streamWindowBytes: 1 }),
 *   "json",
 * );
 * assert.equal(outcome.ok, false);
 * assert.equal(!outcome.ok && outcome.code, "codec_mismatch");
 * ```
 */
export function parseHello(body: Uint8Array, codec: string): HelloOutcome {
  const hello = parseJson(body) as Record<string, unknown> | undefined;
  if (typeof hello !== "object" || hello === null || hello.protocol !== "conduit") {
    return refuse(
      "protocol_mismatch",
      `The peer does not speak conduit (its HELLO has protocol ${JSON.stringify(hello?.protocol)})`,
    );
  }
  if (hello.version !== PROTOCOL_VERSION) {
    return refuse(
      "version_mismatch",
      `Protocol version mismatch: this side speaks ${PROTOCOL_VERSION}, the peer ${
        JSON.stringify(hello.version)
      }`,
    );
  }
  if (hello.codec !== codec) {
    return refuse(
      "codec_mismatch",
      `Codec mismatch: this side speaks "${codec}", the peer ${JSON.stringify(hello.codec)}`,
    );
  }
  const limits: Array<[string, number]> = [
    ["maxFrameBytes", MAX_CONTROL_FRAME_BYTES],
    ["maxInFlight", 1],
    ["streamWindowBytes", 1],
  ];
  // A member set to null is not absent: null is never one of a member's values (§5).
  const features = hello.features === undefined ? [] : hello.features;
  if (!isStrings(features)) {
    return refuse("invalid_hello", "The peer's HELLO features are not strings");
  }
  const auth = hello.auth as Record<string, unknown> | undefined;
  if (
    auth !== undefined &&
    (typeof auth !== "object" || auth === null || typeof auth.method !== "string")
  ) {
    return refuse("invalid_hello", "The peer's HELLO auth is not an object with a method");
  }
  const values: number[] = [];
  for (const [name, min] of limits) {
    const value = hello[name];
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
      return refuse(
        "invalid_hello",
        `The peer's HELLO has ${name} ${JSON.stringify(value)} (must be an integer >= ${min})`,
      );
    }
    values.push(value);
  }
  return {
    ok: true,
    peer: {
      version: PROTOCOL_VERSION,
      codec,
      maxFrameBytes: Math.min(values[0], 0xffff_ffff),
      maxInFlight: values[1],
      streamWindowBytes: values[2],
      features: features as string[],
    },
    ...(auth && {
      auth: {
        method: auth.method as string,
        nonce: parseNonce(auth.nonce),
        role: auth.role === "initiator" || auth.role === "responder" ? auth.role : undefined,
      },
    }),
  };
}

/**
 * The GOODBYE body for `goodbye`: empty for a graceful close, else its JSON with the reason
 * cut to 600 characters, and shorter still until the frame fits in
 * {@linkcode MAX_CONTROL_FRAME_BYTES}.
 *
 * @param goodbye The code and reason; omit both for a graceful close.
 * @returns The body.
 *
 * @example
 * ```ts
 * import { goodbyeBody, parseGoodbye } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(goodbyeBody({}).length, 0);
 * const body = goodbyeBody({ code: "protocol_error", reason: "x".repeat(5000) });
 * assert.equal(parseGoodbye(body).reason?.length, 600);
 * ```
 */
export function goodbyeBody(goodbye: Goodbye): Uint8Array {
  const code = goodbye.code;
  // A normal close has an empty body, unless it says why (an idle timeout).
  if (code === undefined && !goodbye.reason) return new Uint8Array(0);
  const reason = goodbye.reason ?? "";
  const body = (text: string) => utf8.encode(JSON.stringify({ code, reason: text }));
  const fits = (text: string) =>
    text.length <= MAX_REASON_LENGTH && body(text).length < MAX_CONTROL_FRAME_BYTES;
  // Shortened as an ERROR's message is: its longest start in whole code points that fits.
  return body(fits(reason) ? reason : fittedText(reason, "", fits, MAX_REASON_LENGTH));
}

/**
 * Reads a GOODBYE body; fields that are absent or not strings are left out.
 *
 * @param body The GOODBYE frame's body.
 * @returns Its code and reason.
 *
 * @example
 * ```ts
 * import { parseGoodbye } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(parseGoodbye(new Uint8Array(0)), {});
 * const body = new TextEncoder().encode('{"code":"aborted","reason":"drain timeout"}');
 * assert.deepEqual(parseGoodbye(body), { code: "aborted", reason: "drain timeout" });
 * ```
 */
export function parseGoodbye(body: Uint8Array): Goodbye {
  if (body.length === 0) return {};
  const parsed = parseJson(body) as Record<string, unknown> | undefined;
  const goodbye: { code?: string; reason?: string } = {};
  if (typeof parsed?.code === "string") goodbye.code = parsed.code;
  if (typeof parsed?.reason === "string") goodbye.reason = parsed.reason;
  return goodbye;
}

function refuse(code: string, message: string): HelloOutcome {
  return { ok: false, code, message };
}

function isStrings(value: unknown): boolean {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

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
/**
 * The shortest shared secret a side takes, in bytes (a string's UTF-8): 128 bits. Each proof
 * lets guesses of the secret be tested offline (the initiator's goes to whoever it connects to),
 * so the secret must also be random, which no length check can tell (docs/protocol.md §5.1).
 */
export const MIN_SECRET_BYTES = 16;
/** The ASCII label every proof's message starts with. */
export const AUTH_LABEL = "conduit-auth-v2";

/**
 * A side's role in the handshake: the `initiator` opened the connection and proves itself
 * first; the `responder` accepted it and answers only a proof it checked.
 */
export type AuthRole = "initiator" | "responder";

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
