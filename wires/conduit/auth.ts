// The authentication step of conduit's handshake (docs/protocol.md §5.1), between the peer's
// HELLO and the channel being open. The initiator sends its proof at once; the responder
// answers with its own only after checking the initiator's and opening its side, so it signs
// nothing for a peer without the secret. Proofs are computed synchronously, so what a frame means never depends
// on timing: frames are judged in the order they arrive, and until the peer's AUTH checks out
// nothing it sends but a GOODBYE is read as anything but a failure.

import { authProof, authTranscript, constantTimeEqual } from "../../protocol/auth.ts";
import { AUTH_KIND } from "../../protocol/format.ts";
import {
  AUTH_METHOD,
  AUTH_PROOF_BYTES,
  type AuthRole,
  type HelloAuth,
  RETIRED_AUTH_METHOD,
} from "../../protocol/handshake.ts";

/** What the authentication step does to the connection. */
export interface AuthHost {
  /** Sends this side's AUTH frame. */
  sendAuth(proof: Uint8Array): void;
  /**
   * The peer proved it holds the secret. False when this side refused it after all: a
   * responder then sends no proof.
   */
  onEstablished(): boolean;
  /** The step failed: the handshake fails with `code` (`auth_required`, `auth_failed`). */
  onRefused(code: string, message: string): void;
}

/** The HELLO bodies of both sides, as sent. */
export interface AuthHellos {
  readonly own: Uint8Array;
  readonly peer: Uint8Array;
}

/** One connection's authentication step. */
export class ConduitAuth {
  /** This side's nonce, sent in its HELLO. */
  readonly nonce: Uint8Array;
  readonly role: AuthRole;
  readonly #secret: Uint8Array;
  #host: AuthHost | undefined;
  #transcript: Uint8Array | undefined;
  #done = false;

  constructor(secret: Uint8Array, role: AuthRole, nonce: Uint8Array) {
    this.#secret = secret;
    this.role = role;
    this.nonce = nonce;
  }

  /** Whether the peer's HELLO was accepted and its AUTH is awaited. */
  get waiting(): boolean {
    return this.#host !== undefined && !this.#done;
  }

  /** The peer's HELLO passed its checks: starts the step, or refuses its `auth`. */
  start(auth: HelloAuth | undefined, hellos: AuthHellos, host: AuthHost): void {
    if (auth === undefined) {
      this.#done = true;
      return host.onRefused(
        "auth_required",
        "This side requires authentication with a shared secret and the peer offered none",
      );
    }
    const problem = this.#problem(auth);
    if (problem !== undefined) {
      this.#done = true;
      return host.onRefused("auth_failed", problem);
    }
    this.#host = host;
    this.#transcript = this.role === "initiator"
      ? authTranscript(hellos.own, hellos.peer)
      : authTranscript(hellos.peer, hellos.own);
    if (this.role === "initiator") {
      host.sendAuth(authProof(this.#secret, "initiator", this.#transcript));
    }
  }

  /** A frame from the peer while its AUTH is awaited. */
  onFrame(frame: Uint8Array): void {
    if (frame[0] !== AUTH_KIND) {
      return this.#fail(
        `The peer sent a frame of type 0x${
          frame[0].toString(16).padStart(2, "0")
        } where its AUTH belonged`,
      );
    }
    if (frame.length !== 1 + AUTH_PROOF_BYTES) {
      return this.#fail(
        `The peer's AUTH carries ${frame.length - 1} bytes, not a ${AUTH_PROOF_BYTES}-byte proof`,
      );
    }
    const peerRole = this.role === "initiator" ? "responder" : "initiator";
    const expected = authProof(this.#secret, peerRole, this.#transcript!);
    if (!constantTimeEqual(expected, frame.subarray(1))) {
      return this.#fail(
        "The peer's proof does not match: it holds another shared secret, or the handshake " +
          "was replayed or altered on the way",
      );
    }
    this.#done = true;
    const host = this.#host!;
    // The channel opens before the responder's proof goes: if it refuses the peer after all
    // (its handlers could not be made), the peer gets the GOODBYE instead of a proof.
    if (host.onEstablished() && this.role === "responder") {
      host.sendAuth(authProof(this.#secret, "responder", this.#transcript!));
    }
  }

  /** Why the peer's `auth` fails before any proof is checked, or nothing. */
  #problem(auth: HelloAuth): string | undefined {
    if (auth.method === RETIRED_AUTH_METHOD) {
      return `The peer offered "${RETIRED_AUTH_METHOD}", the retired handshake that could be ` +
        `turned into a signing oracle: upgrade it to a conduit that speaks "${AUTH_METHOD}"`;
    }
    if (auth.method !== AUTH_METHOD) {
      return `The peer offered authentication method ${
        JSON.stringify(auth.method.slice(0, 40))
      }, not "${AUTH_METHOD}"`;
    }
    if (auth.nonce === undefined) return "The peer's nonce is not 64 lowercase hex digits";
    if (constantTimeEqual(auth.nonce, this.nonce)) {
      return "The peer's nonce is this side's own (a reflection)";
    }
    if (auth.role === undefined) {
      return 'The peer\'s HELLO auth has no role ("initiator" or "responder")';
    }
    if (auth.role === this.role) {
      return `Both sides are the ${this.role}: the side that accepted the connection must be ` +
        `the responder (auth.role; serve() sets it), the side that opened it the initiator`;
    }
    return undefined;
  }

  #fail(message: string): void {
    if (this.#done) return;
    this.#done = true;
    this.#host!.onRefused("auth_failed", message);
  }
}
