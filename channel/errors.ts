/**
 * The errors a channel raises. Each names one condition a caller may want to tell apart:
 * the connection went away, the peer's handler threw, the method does not exist, the deadline
 * passed, the handshake failed, or the peer broke the protocol.
 *
 * @example
 * ```ts
 * import { ConnectionClosedError, ProtocolError } from "@conduit/ipc/channel";
 * import { ConduitError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const err = new ConnectionClosedError("Connection closed", {
 *   cause: new ProtocolError("unknown frame kind 0x7f"),
 * });
 * assert.ok(err instanceof ConduitError);
 * assert.ok(err.cause instanceof ProtocolError);
 * ```
 *
 * @module
 */

import { ConduitError } from "../errors.ts";
import { printable } from "../_utf8.ts";

export { ConduitError };
// The errors of a call's failure as it crosses the wire live with the base errors, since
// codecs and wires below the channel build them too.
export { MethodNotFoundError, RemoteError, type RemoteErrorFields } from "../errors.ts";

/** The code and reason of a GOODBYE the peer sent, as sent. */
export interface PeerGoodbye {
  /** Why it closed, as a code (`aborted`, `protocol_error`, `idle_timeout`, …). */
  readonly code: string;
  /** Its reason, in words (possibly empty). */
  readonly reason: string;
}

/**
 * The connection ended (closed, aborted, the peer went away, or a protocol error) while a call
 * or stream was pending. `cause` says why: the transport error, a {@linkcode ProtocolError},
 * the peer's GOODBYE, or the reason given to `abort()`.
 *
 * @example
 * ```ts
 * import { ConnectionClosedError } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * const err = new ConnectionClosedError("Peer closed the connection");
 * assert.equal(err.name, "ConnectionClosedError");
 * assert.equal(err.goodbye, undefined);
 * ```
 */
export class ConnectionClosedError extends ConduitError {
  /**
   * The peer's GOODBYE, when a GOODBYE with a code from the peer ended an open connection: its
   * words verbatim (the message shows them escaped). One refusing the handshake is a
   * {@linkcode HandshakeError} with its `code`.
   */
  declare readonly goodbye?: PeerGoodbye;

  /**
   * Creates the error.
   *
   * @param message What ended the connection.
   * @param options Standard error options (`cause`), and the peer's `goodbye` when it said one.
   */
  constructor(message: string, options?: ErrorOptions & { goodbye?: PeerGoodbye }) {
    super(message, options);
    if (options?.goodbye !== undefined) this.goodbye = options.goodbye;
  }
}

/**
 * This side's drain (after its `close()`, or after the peer's GOODBYE) waited `drainTimeout`
 * for the calls in flight, then cut them off: the error its own calls still pending fail with.
 * It is a {@linkcode ConnectionClosedError}; the peer is told with a GOODBYE whose code is
 * `aborted`.
 *
 * @example
 * ```ts
 * import { DrainTimeoutError, openChannel } from "@conduit/ipc/channel";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * const [a, b] = memoryPair();
 * const handlers = { never: () => new Promise<never>(() => {}) };
 * const [client, server] = await Promise.all([
 *   openChannel<typeof handlers>(a, { drainTimeout: 20 }),
 *   openChannel(b, { handlers }),
 * ]);
 * const pending = client.remote.never(undefined);
 * await client.close();
 * await assert.rejects(pending, DrainTimeoutError);
 * await server.closed.catch(() => {});
 * ```
 */
export class DrainTimeoutError extends ConnectionClosedError {
  /** The drain timeout that passed, in milliseconds. */
  readonly timeout: number;

  /**
   * Creates the error for calls a close cut off.
   *
   * @param timeout The drain timeout in milliseconds.
   */
  constructor(timeout: number) {
    super(`In-flight calls did not finish within drainTimeout (${timeout} ms)`);
    this.timeout = timeout;
  }
}

/**
 * A call's deadline passed before it finished: its `timeout` (or the channel's
 * `defaultTimeout`) elapsed. The handler's signal fires with this error too.
 *
 * @example
 * ```ts
 * import { DeadlineExceededError } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * const err = new DeadlineExceededError("slow", 50);
 * assert.equal(err.message, 'Call to "slow" exceeded its deadline of 50 ms');
 * ```
 */
export class DeadlineExceededError extends ConduitError {
  /** The method whose deadline passed. */
  readonly method: string;
  /** The deadline, in milliseconds from the call's start (or from receipt, for a handler). */
  readonly timeout: number;

  /**
   * Creates the error for a call whose deadline passed.
   *
   * @param method The method called.
   * @param timeout The deadline in milliseconds.
   */
  constructor(method: string, timeout: number) {
    super(`Call to "${method}" exceeded its deadline of ${timeout} ms`);
    this.method = method;
    this.timeout = timeout;
  }
}

/**
 * The caller cancelled the call: the reason a handler's `ctx.signal` fires with when the peer
 * sends CANCEL (the caller aborted, or stopped reading the stream early).
 *
 * @example
 * ```ts
 * import { CallCancelledError } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * const err = new CallCancelledError("work", "user pressed stop");
 * assert.equal(err.message, 'The caller cancelled "work": user pressed stop');
 * ```
 */
export class CallCancelledError extends ConduitError {
  /** The cancelled method. */
  readonly method: string;

  /**
   * Creates the error a handler's signal fires with when its caller cancels.
   *
   * @param method The cancelled method.
   * @param reason The caller's reason, if it sent one: the message quotes it with its control
   * characters escaped (`\n` as `\u000a`), since the peer chose it.
   */
  constructor(method: string, reason?: string) {
    super(`The caller cancelled "${method}"${reason ? `: ${printable(reason)}` : ""}`);
    this.method = method;
  }
}

/**
 * The handshake failed: the peers speak different protocol versions or codecs, the peer's
 * HELLO was invalid, or none arrived in time. `code` is the GOODBYE code
 * (`version_mismatch`, `codec_mismatch`, `protocol_mismatch`, `invalid_hello`,
 * `handshake_timeout`, `protocol_error`), or `closed` (the peer went away, or said GOODBYE
 * without a code: nothing is sent for it).
 *
 * @example
 * ```ts
 * import { HandshakeError } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * const err = new HandshakeError("codec_mismatch", 'Codec mismatch: this side speaks "json", the peer "msgpack"');
 * assert.equal(err.code, "codec_mismatch");
 * ```
 */
export class HandshakeError extends ConduitError {
  /** What went wrong, as a GOODBYE code. */
  readonly code: string;

  /**
   * Creates the error naming what failed in the handshake.
   *
   * @param code The GOODBYE code naming the failure.
   * @param message What differed, with both values.
   * @param options Standard error options (`cause`).
   */
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/**
 * Authentication in the handshake failed (docs/protocol.md §5.1): `code` is `auth_required`
 * (one side has a shared secret and the other has none) or `auth_failed` (the proofs did not
 * match: the peers hold different secrets, or a handshake was replayed, reflected or altered
 * on the way; both sides are in one `auth.role`; or the peer sent something else where its
 * AUTH belonged). The message never contains the secret or a proof.
 *
 * @example
 * ```ts
 * import { AuthenticationError, HandshakeError, openChannel } from "@conduit/ipc/channel";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * const [a, b] = memoryPair();
 * const results = await Promise.allSettled([
 *   openChannel(a, {
 *     codec: jsonCodec(),
 *     auth: { secret: "one secret, 16 bytes or more", role: "responder" },
 *   }),
 *   openChannel(b, { codec: jsonCodec(), auth: { secret: "another one, just as long" } }),
 * ]);
 * for (const result of results) {
 *   assert.equal(result.status, "rejected");
 *   assert.ok(result.reason instanceof AuthenticationError);
 *   assert.ok(result.reason instanceof HandshakeError);
 *   assert.equal(result.reason.code, "auth_failed");
 * }
 * ```
 */
export class AuthenticationError extends HandshakeError {}

export { ProtocolError } from "../protocol/format.ts";
