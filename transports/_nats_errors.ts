// The errors a NATS transport ends with, exported by transports/nats.ts.

import { TransportClosedError } from "../errors.ts";

/**
 * Messages of a NATS connection were lost (core NATS dropped them, e.g. for a slow consumer or
 * across a reconnect): the sequence number that arrived is not the one expected. The
 * connection is closed at once rather than let a byte stream with a hole through; reads fail
 * with a `TransportClosedError` whose `cause` is this error.
 *
 * @example
 * ```ts
 * import { NatsMessagesLostError } from "@conduit/ipc/transports/nats";
 * import { TransportClosedError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const error = new NatsMessagesLostError("NATS app.rpc", 7, 9);
 * assert.ok(error instanceof TransportClosedError);
 * assert.equal(error.expected, 7);
 * assert.equal(error.received, 9);
 * assert.match(error.message, /expected message 7, got 9/);
 * ```
 */
export class NatsMessagesLostError extends TransportClosedError {
  /** The sequence number that was due. */
  readonly expected: number;
  /** The sequence number that came instead. */
  readonly received: number;

  /**
   * Creates the error.
   *
   * @param label The connection, for the message.
   * @param expected The sequence number that was due.
   * @param received The one that arrived.
   */
  constructor(label: string, expected: number, received: number) {
    super(
      `${label}: messages were lost (expected message ${expected}, got ${received}); ` +
        "the connection is closed",
    );
    this.expected = expected;
    this.received = received;
  }
}

/**
 * The peer of a NATS connection is gone: its inbox has no subscriber any more (its NATS
 * connection closed or its process died), or nothing came from it for several heartbeat
 * intervals. Pending reads and writes fail with it.
 *
 * @example
 * ```ts
 * import { NatsPeerGoneError } from "@conduit/ipc/transports/nats";
 * import { TransportClosedError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * assert.ok(new NatsPeerGoneError("the peer left") instanceof TransportClosedError);
 * ```
 */
export class NatsPeerGoneError extends TransportClosedError {}
