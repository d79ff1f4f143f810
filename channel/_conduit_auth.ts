// The authentication step of conduit's handshake (docs/protocol.md §5.1), between the peer's
// HELLO and the channel being open: this side sends its proof in an AUTH frame once it knows
// the peer's nonce, and the channel opens only when the peer's AUTH carries the proof expected
// of it. Nothing else the peer sends meanwhile is read as anything but a failure, so no
// handler can be reached before authentication.

import {
  AUTH_KIND,
  AUTH_METHOD,
  AUTH_NONCE_BYTES,
  AUTH_PROOF_BYTES,
  authProof,
  constantTimeEqual,
} from "../protocol/auth.ts";
import type { HelloAuth } from "../protocol/handshake.ts";

/** What the authentication step does to the connection. */
export interface AuthHost {
  /** Sends this side's AUTH frame. */
  send(proof: Uint8Array): void;
  /** The peer proved it holds the secret. */
  established(): void;
  /** The step failed: the handshake fails with `code` (`auth_required`, `auth_failed`). */
  refused(code: string, message: string): void;
}

/** One connection's authentication step. */
export class ConduitAuth {
  /** This side's nonce, sent in its HELLO. */
  readonly nonce: Uint8Array = crypto.getRandomValues(new Uint8Array(AUTH_NONCE_BYTES));
  readonly #secret: Uint8Array;
  #host: AuthHost | undefined;
  #expected: Uint8Array | undefined;
  #received: Uint8Array | undefined;
  #done = false;

  constructor(secret: Uint8Array) {
    this.#secret = secret;
  }

  /** Whether the peer's HELLO was accepted and its AUTH is awaited. */
  get waiting(): boolean {
    return this.#host !== undefined && !this.#done;
  }

  /** The peer's HELLO passed its checks: starts the step, or refuses its `auth`. */
  start(auth: HelloAuth | undefined, host: AuthHost): void {
    if (auth === undefined) {
      return host.refused(
        "auth_required",
        "This side requires authentication with a shared secret and the peer offered none",
      );
    }
    if (auth.method !== AUTH_METHOD) {
      return host.refused(
        "auth_failed",
        `The peer offered authentication method ${
          JSON.stringify(auth.method.slice(0, 40))
        }, not "${AUTH_METHOD}"`,
      );
    }
    const peerNonce = auth.nonce;
    if (peerNonce === undefined) {
      return host.refused("auth_failed", "The peer's nonce is not 64 lowercase hex digits");
    }
    if (constantTimeEqual(peerNonce, this.nonce)) {
      return host.refused("auth_failed", "The peer's nonce is this side's own (a reflection)");
    }
    this.#host = host;
    Promise.all([
      authProof(this.#secret, this.nonce, peerNonce),
      authProof(this.#secret, peerNonce, this.nonce),
    ]).then(([own, expected]) => {
      if (this.#done) return;
      host.send(own);
      this.#expected = expected;
      this.#check();
    }, (error) => this.#fail(`Computing the proof failed: ${String(error)}`));
  }

  /** A frame from the peer while its AUTH is awaited. */
  frame(frame: Uint8Array): void {
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
    if (this.#received !== undefined) return this.#fail("The peer sent a second AUTH");
    this.#received = frame.slice(1);
    this.#check();
  }

  #check(): void {
    const expected = this.#expected;
    const received = this.#received;
    if (expected === undefined || received === undefined || this.#done) return;
    this.#done = true;
    if (constantTimeEqual(expected, received)) this.#host!.established();
    else {
      this.#host!.refused(
        "auth_failed",
        "The peer's proof does not match: it holds another shared secret, or replayed a " +
          "recorded handshake",
      );
    }
  }

  #fail(message: string): void {
    if (this.#done) return;
    this.#done = true;
    this.#host!.refused("auth_failed", message);
  }
}
