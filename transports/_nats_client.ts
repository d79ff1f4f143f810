// The part of a NATS client connection the NATS transports use, as structural types: a
// `NatsConnection` of `npm:@nats-io/transport-node` (or of another nats.js transport) fits it.

/**
 * What the NATS transports need of a NATS client connection. Pass the `NatsConnection` that
 * `connect()` of `npm:@nats-io/transport-node` returns, created with your own servers,
 * credentials, token or TLS options.
 *
 * @example
 * ```ts
 * import type { NatsClient } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * // Any object of this shape; in practice `await connect({ servers })` of the NATS client.
 * const methods: Array<keyof NatsClient> = ["publish", "subscribe", "request", "flush"];
 * assert.equal(methods.length, 4);
 * ```
 */
export interface NatsClient {
  /** What the server announced, `max_payload` among it; undefined while disconnected. */
  readonly info?: { readonly max_payload: number } | undefined;
  /** Publishes `payload` on `subject`, with an optional reply subject. */
  publish(subject: string, payload: Uint8Array, options?: { reply?: string }): void;
  /** Subscribes to `subject`, delivering each message to `options.callback`. */
  subscribe(subject: string, options: NatsSubscribeOptions): NatsSubscription;
  /** Sends a request and resolves with the first reply. */
  request(subject: string, payload: Uint8Array, options: { timeout: number }): Promise<NatsMessage>;
  /** Resolves once the server has processed everything sent before. */
  flush(): Promise<void>;
  /** Whether the connection is closed for good. */
  isClosed(): boolean;
  /** Resolves when the connection closes (with the error that closed it, if any). */
  closed(): Promise<void | Error>;
  /** The server connected to, `host:port`. */
  getServer(): string;
}

/**
 * The subscription options the NATS transports pass.
 *
 * @example
 * ```ts
 * import type { NatsSubscribeOptions } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * const options: NatsSubscribeOptions = { queue: "workers", callback: () => {} };
 * assert.equal(options.queue, "workers");
 * ```
 */
export interface NatsSubscribeOptions {
  /** The queue group. */
  queue?: string;
  /** Called with each message, or with the error that ended the subscription. */
  callback: (error: Error | null, msg: NatsMessage) => void;
}

/**
 * A subscription, as the NATS transports use it.
 *
 * @example
 * ```ts
 * import type { NatsSubscription } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * const closed: Array<keyof NatsSubscription> = ["closed", "isClosed"];
 * assert.equal(closed.length, 2);
 * ```
 */
export interface NatsSubscription {
  /** Resolves when the subscription ends (with the error that ended it, if any). */
  readonly closed: Promise<void | Error>;
  /** Stops the subscription. */
  unsubscribe(): void;
  /** Whether it has ended. */
  isClosed(): boolean;
}

/**
 * A message, as the NATS transports read it.
 *
 * @example
 * ```ts
 * import type { NatsMessage } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * const msg: Pick<NatsMessage, "subject" | "data"> = { subject: "a", data: new Uint8Array(1) };
 * assert.equal(msg.data.length, 1);
 * ```
 */
export interface NatsMessage {
  /** The subject it was published on. */
  readonly subject: string;
  /** Its reply subject, if any. */
  readonly reply?: string | undefined;
  /** Its payload. */
  readonly data: Uint8Array;
  /** Its headers; a status message (no responders: 503) has `code`. */
  readonly headers?: { readonly code: number } | undefined;
  /** Publishes `payload` to the reply subject. */
  respond(payload: Uint8Array): boolean;
}
