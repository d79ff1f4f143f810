/**
 * NATS transports: {@linkcode listenNats} and {@linkcode connectNats} carry a conduit byte
 * stream between processes (and machines) through a NATS server, so channels, calls and
 * streams work across instances with no load balancer of conduit's own. Listeners on the same
 * subject and queue group share the incoming connections; each connection then stays with the
 * instance that accepted it.
 *
 * You create the `NatsClient` (`connect()` of `npm:@nats-io/transport-node`) with your own
 * servers, credentials, token or TLS options; conduit only uses it, and never closes it.
 *
 * ## The protocol on NATS (version `conduit-nats/1`)
 *
 * **Handshake.** The connecting end subscribes to a fresh inbox `C` and sends a request to the
 * listening subject (in the listeners' queue group) whose body is the JSON
 * `{"protocol":"conduit-nats/1","inbox":C,"window":W,"heartbeat":H}`. The one listener instance
 * that gets it subscribes to a fresh inbox `S` of its own and replies with the same shape naming
 * `S`, or with `{"protocol":"conduit-nats/1","error":"…"}` to refuse (its backlog is full, the
 * request is malformed). `W` is a whole number of bytes, at least 1, `H` a positive number of ms.
 * The client then sends `Open` (below) to `S`, and the listener yields the connection once that
 * came; from then on each end publishes only to the other's inbox: the connection is pinned to that
 * instance. A listener sends nothing to `C` before `Open`, and drops a connection whose `Open` did
 * not come within 10 s without a word: when several listeners answered (no queue group), the ones
 * whose reply the client did not take never disturb it. So nothing reaches `C` before the reply
 * from the listener: what does (from whoever saw `C` in the request) is kept for the connection up
 * to the client's window, beyond which `connectNats` fails with `TransportClosedError`. No
 * responder is `Deno.errors.ConnectionRefused`, no reply within the timeout `Deno.errors.TimedOut`
 * (on Node and Bun an `Error` with `code` `"ECONNREFUSED"` or `"ETIMEDOUT"`, as node:net's).
 *
 * **Messages.** Every message on an inbox starts with a kind byte and a 32-bit big-endian
 * sequence number, counted per direction from 0 over every kind:
 * `0 Data` (the bytes follow), `1 Credit` (a float64: the total of Data bytes the sender may have
 * sent so far, a whole number; anything else ends the connection), `2 End` (half-close: no more
 * Data), `3 Ping` (liveness, published with the sender's inbox as reply subject), `4 Bye` (graceful
 * close of both directions), `5 Reset` (abort; a UTF-8 reason follows), `6 Open` (the client's
 * first message).
 *
 * **Any size.** A write is cut into Data messages no larger than the payload limit the server
 * announces (`nc.info.max_payload`, 1 MiB by default) less the 5-byte header.
 *
 * **Nothing lost, nothing reordered.** The receiver starts by allowing `W` bytes (its
 * `windowBytes`) and grants more with a Credit message once a quarter of the window has been
 * read, so a slow reader slows the writer and at most `W` bytes wait for it, in the receiver's
 * memory and in NATS. Core NATS still drops messages in some cases (a slow consumer, a
 * reconnect): a sequence number out of turn closes the connection with
 * {@linkcode NatsMessagesLostError}, so a reader never sees a stream with a hole.
 *
 * **A peer that disappears.** Each end sends a Ping every `heartbeat` when it sent nothing
 * else meanwhile. When the peer's inbox has no subscriber any more (its NATS connection closed
 * or its process died), the server answers the Ping with a "no responders" status and the
 * connection ends with {@linkcode NatsPeerGoneError} within one interval; if nothing at all
 * comes from the peer for three of its intervals (plus one of ours), likewise. Closing the
 * local `NatsClient` ends every transport on it with `TransportClosedError`.
 *
 * **Discovery** (unless `discoverable: false`). A listener instance with id `I` also takes
 * handshakes on `<subject>.instance.I` (no queue group: that instance alone), answers every
 * request on `<subject>.discover` with `{"protocol":"conduit-nats/1","instance":I,
 * "subject":"<subject>.instance.I"}`, and publishes the same with `"event":"up"` on
 * `<subject>.announce` when it starts listening and `"event":"down"` when it closes. A
 * `NatsServicePool` (`@conduit/ipc/workers/nats`) probes and listens there to connect to
 * every instance, notice new ones within a probe interval, and stop using closed ones; it
 * ignores a description whose `subject` is not `<subject>.instance.I` of its `instance`. The
 * account of a service needs to subscribe to these subjects and publish on the announce one.
 *
 * Not covered: interest propagation delays across a NATS cluster or supercluster between
 * the handshake's subscription and its first message (on one server the order is kept).
 *
 * @example Echo over NATS (needs a nats-server; transports/nats_test.ts runs the same)
 * ```ts ignore
 * import { connect } from "npm:@nats-io/transport-node@3.4.0";
 * import { connectNats, listenNats } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * const nc = await connect({ servers: "127.0.0.1:4222" });
 * await using listener = await listenNats(nc, "app.echo", { queue: "echo" });
 * const serving = (async () => {
 *   for await (const server of listener) {
 *     await server.readable.pipeTo(server.writable);
 *     return;
 *   }
 * })();
 * await using client = await connectNats(nc, "app.echo");
 * const writer = client.writable.getWriter();
 * await writer.write(new TextEncoder().encode("hi"));
 * await writer.close();
 * assert.equal(await new Response(client.readable).text(), "hi");
 * await serving;
 * await nc.close();
 * ```
 *
 * @module
 */

import { NoRespondersError, RequestError, TimeoutError } from "@nats-io/transport-node";
import { ConduitError, TransportClosedError } from "../errors.ts";
import { connectionError } from "../_runtime.ts";
import { ListenerBase } from "./_conn_transport.ts";
import { ByteChannelTransport } from "./_byte_channel_transport.ts";
import { NatsChannel, type NatsChannelSettings } from "./_nats_channel.ts";
import { flushWithin } from "./_nats_flow.ts";
import { decodeHello, encodeHello, isByteCount, PROTOCOL } from "./_nats_wire.ts";
import { DiscoveryResponder, isInstanceId } from "./_nats_discovery.ts";
import type { Listener, Transport } from "./types.ts";
import type { NatsClient, NatsMessage, NatsSubscription } from "./_nats_client.ts";

export { ConduitError, TransportClosedError };
export type { Listener, Transport };

export { NatsMessagesLostError, NatsPeerGoneError } from "./_nats_errors.ts";
export type {
  NatsClient,
  NatsMessage,
  NatsSubscribeOptions,
  NatsSubscription,
} from "./_nats_client.ts";

/**
 * The default receive window of a NATS transport: the Data bytes a peer may have sent that
 * this end has not read yet (4 MiB).
 *
 * @example
 * ```ts
 * import { DEFAULT_NATS_WINDOW_BYTES } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_NATS_WINDOW_BYTES, 4 * 1024 * 1024);
 * ```
 */
export const DEFAULT_NATS_WINDOW_BYTES: number = 4 * 1024 * 1024;

/**
 * The default heartbeat interval of a NATS transport, in ms.
 *
 * @example
 * ```ts
 * import { DEFAULT_NATS_HEARTBEAT } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_NATS_HEARTBEAT, 1000);
 * ```
 */
export const DEFAULT_NATS_HEARTBEAT = 1000;

/**
 * The default time {@linkcode connectNats} waits for a listener's reply, in ms.
 *
 * @example
 * ```ts
 * import { DEFAULT_NATS_CONNECT_TIMEOUT } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_NATS_CONNECT_TIMEOUT, 10_000);
 * ```
 */
export const DEFAULT_NATS_CONNECT_TIMEOUT = 10_000;

/**
 * The default number of connections a NATS listener holds for `accept()` before it refuses
 * new ones.
 *
 * @example
 * ```ts
 * import { DEFAULT_NATS_BACKLOG } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_NATS_BACKLOG, 128);
 * ```
 */
export const DEFAULT_NATS_BACKLOG = 128;

/**
 * Settings shared by both ends of a NATS transport.
 *
 * @example
 * ```ts
 * import type { NatsTransportOptions } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * const options: NatsTransportOptions = { windowBytes: 1 << 20, heartbeat: 500 };
 * assert.equal(options.heartbeat, 500);
 * ```
 */
export interface NatsTransportOptions {
  /**
   * The bytes the peer may send ahead of this end's reads: what a slow reader costs in
   * memory, and what a fast stream needs to keep the pipe full. A whole number of bytes.
   *
   * @default {DEFAULT_NATS_WINDOW_BYTES}
   */
  windowBytes?: number;
  /**
   * How often this end shows it is alive, in ms; a peer gone silent is noticed after about
   * three intervals, a closed one within one.
   *
   * @default {DEFAULT_NATS_HEARTBEAT}
   */
  heartbeat?: number;
  /**
   * The prefix of the inbox subjects this end subscribes to (for accounts whose permissions
   * allow only some subjects).
   *
   * @default {"_INBOX"}
   */
  inboxPrefix?: string;
}

/**
 * Options of {@linkcode listenNats}.
 *
 * @example
 * ```ts
 * import type { ListenNatsOptions } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * const options: ListenNatsOptions = { queue: "workers", backlog: 16 };
 * assert.equal(options.queue, "workers");
 * ```
 */
export interface ListenNatsOptions extends NatsTransportOptions {
  /**
   * The queue group: listeners on the same subject and group share the connections, each
   * going to one of them. Without it, every listener on the subject answers and the client
   * takes the first reply; the others never yield the connection.
   */
  queue?: string;
  /**
   * Accepted connections held for `accept()`; beyond that new ones are refused.
   *
   * @default {DEFAULT_NATS_BACKLOG}
   */
  backlog?: number;
  /**
   * This instance's id among the listeners of the subject (letters, digits, `-`, `_`; at most
   * 64): what a `NatsServicePool` reports per instance, and the last token of the subject that
   * reaches this instance alone.
   *
   * @default {a random id of 12 hex digits}
   */
  instance?: string;
  /**
   * Whether the listener takes part in service discovery (see the module doc): it answers
   * probes on `<subject>.discover`, takes connections on `<subject>.instance.<id>` too, and
   * announces its start and end on `<subject>.announce`, so that a `NatsServicePool` finds it.
   *
   * @default {true}
   */
  discoverable?: boolean;
}

/**
 * Options of {@linkcode connectNats}.
 *
 * @example
 * ```ts
 * import type { ConnectNatsOptions } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * const options: ConnectNatsOptions = { timeout: 2000 };
 * assert.equal(options.timeout, 2000);
 * ```
 */
export interface ConnectNatsOptions extends NatsTransportOptions {
  /**
   * How long to wait for a listener's reply, in ms.
   *
   * @default {DEFAULT_NATS_CONNECT_TIMEOUT}
   */
  timeout?: number;
}

/**
 * A {@linkcode Listener} of conduit connections on a NATS subject; also tells its subject.
 *
 * @example
 * ```ts ignore
 * import { connect } from "npm:@nats-io/transport-node@3.4.0";
 * import { listenNats, type NatsListener } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * const nc = await connect({ servers: "127.0.0.1:4222" });
 * const listener: NatsListener = await listenNats(nc, "app.rpc");
 * assert.equal(listener.subject, "app.rpc");
 * await listener.close();
 * await nc.close();
 * ```
 */
export interface NatsListener extends Listener {
  /** The subject connections are requested on. */
  readonly subject: string;
  /** The queue group, if any. */
  readonly queue: string | undefined;
  /** This instance's id (see {@linkcode ListenNatsOptions.instance}). */
  readonly instance: string;
}

/**
 * Listens for conduit connections on a NATS subject.
 *
 * Listeners on the same subject with the same `queue` share the connections (each one goes
 * to a single listener, and stays with it). `nc` is yours: create it with the servers,
 * credentials, token or TLS options your deployment needs; closing the listener does not
 * close it, closing it ends the listener and its transports. A service should list every
 * cluster URL and reconnect forever (`maxReconnectAttempts: -1`): with nats.js's default of 10
 * attempts, a service whose node dies gives up after about 20 s and its listener ends.
 *
 * @param nc An open NATS connection.
 * @param subject The subject clients connect to.
 * @param options The queue group, backlog and transport settings.
 * @returns A listener, once the server knows of it; iterate it to accept, `close()` it to stop.
 * @throws {RangeError} When an option is not a positive number (`windowBytes`: not a positive
 * whole number).
 * @throws {TypeError} When `instance` is not a valid id.
 *
 * @example
 * ```ts ignore
 * import { connect } from "npm:@nats-io/transport-node@3.4.0";
 * import { connectNats, listenNats } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * const nc = await connect({ servers: "127.0.0.1:4222" });
 * const listener = await listenNats(nc, "app.rpc", { queue: "rpc" });
 * const accepted = listener.accept();
 * const client = await connectNats(nc, "app.rpc");
 * const server = await accepted;
 * await client.writable.getWriter().write(new Uint8Array([7]));
 * const { value } = await server.readable.getReader().read();
 * assert.deepEqual(value, new Uint8Array([7]));
 * await Promise.all([client.close(), server.close(), listener.close()]);
 * await nc.close();
 * ```
 */
export async function listenNats(
  nc: NatsClient,
  subject: string,
  options: ListenNatsOptions = {},
): Promise<NatsListener> {
  const listener = new NatsConnListener(nc, subject, options);
  // Once the server has the subscription, a client's request reaches it.
  await nc.flush();
  return listener;
}

/**
 * Connects to a conduit listener on a NATS subject (one of the instances of its queue group).
 *
 * `nc` is yours (servers, credentials, TLS are its options); the transport never closes it,
 * and closing it ends the transport with `TransportClosedError`.
 *
 * @param nc An open NATS connection.
 * @param subject The subject a {@linkcode listenNats} listener serves.
 * @param options The handshake timeout and transport settings.
 * @returns The connected transport.
 * @throws {Deno.errors.ConnectionRefused} When no listener serves `subject`, or it refused (on
 * Node and Bun an `Error` with `code` `"ECONNREFUSED"`).
 * @throws {Deno.errors.TimedOut} When no reply came within `timeout` (on Node and Bun an `Error`
 * with `code` `"ETIMEDOUT"`).
 * @throws {RangeError} When an option is not a positive number (`windowBytes`: not a positive
 * whole number).
 *
 * @example
 * ```ts ignore
 * import { connect } from "npm:@nats-io/transport-node@3.4.0";
 * import { connectNats } from "@conduit/ipc/transports/nats";
 * import assert from "node:assert/strict";
 *
 * const nc = await connect({ servers: "127.0.0.1:4222" });
 * await assert.rejects(connectNats(nc, "nobody.listens"), Deno.errors.ConnectionRefused);
 * await nc.close();
 * ```
 */
export async function connectNats(
  nc: NatsClient,
  subject: string,
  options: ConnectNatsOptions = {},
): Promise<Transport> {
  const timeout = positive(options.timeout, DEFAULT_NATS_CONNECT_TIMEOUT, "timeout");
  const channel = new NatsChannel(nc, settingsOf(options), forget(nc));
  let reply: NatsMessage;
  try {
    reply = await nc.request(subject, encodeHello(channel.hello()), { timeout });
  } catch (cause) {
    await channel.close(true);
    if (
      cause instanceof NoRespondersError ||
      (cause instanceof RequestError && cause.isNoResponders())
    ) {
      throw connectionError(
        "ConnectionRefused",
        `No conduit listener answers on NATS subject ${subject}`,
        { cause },
      );
    }
    if (cause instanceof TimeoutError) {
      throw connectionError(
        "TimedOut",
        `No conduit listener replied on NATS subject ${subject} within ${timeout} ms`,
        { cause },
      );
    }
    throw new TransportClosedError(
      `Connecting on NATS subject ${subject} failed: ${messageOf(cause)}`,
      { cause },
    );
  }
  let hello;
  try {
    hello = decodeHello(reply.data);
  } catch (error) {
    await channel.close(true);
    throw error;
  }
  if ("error" in hello) {
    await channel.close(true);
    throw connectionError(
      "ConnectionRefused",
      `The conduit listener on NATS subject ${subject} refused: ${hello.error}`,
    );
  }
  try {
    channel.connect(hello, `NATS ${subject} (to ${hello.inbox})`);
  } catch (error) {
    await channel.close(true);
    throw error;
  }
  remember(nc, channel);
  return new ByteChannelTransport(channel);
}

class NatsConnListener extends ListenerBase implements NatsListener {
  readonly addr: Deno.Addr;
  readonly subject: string;
  readonly queue: string | undefined;
  readonly instance: string;
  readonly #nc: NatsClient;
  readonly #settings: NatsChannelSettings;
  readonly #backlog: number;
  readonly #subscription: NatsSubscription;
  readonly #discovery: DiscoveryResponder | undefined;
  readonly #ready: Transport[] = [];
  /** Connections whose client has not sent Open yet, each with the timer that drops it. */
  readonly #opening = new Map<NatsChannel, ReturnType<typeof setTimeout>>();
  readonly #waiters: PromiseWithResolvers<Transport>[] = [];

  constructor(nc: NatsClient, subject: string, options: ListenNatsOptions) {
    super();
    this.#nc = nc;
    this.subject = subject;
    this.queue = options.queue;
    this.#settings = settingsOf(options);
    this.#backlog = positive(options.backlog, DEFAULT_NATS_BACKLOG, "backlog");
    this.addr = serverAddr(nc);
    this.instance = options.instance ?? crypto.randomUUID().replaceAll("-", "").slice(0, 12);
    if (!isInstanceId(this.instance)) {
      throw new TypeError(
        `instance must be 1 to 64 letters, digits, "-" or "_", got ${
          JSON.stringify(this.instance)
        }`,
      );
    }
    this.#subscription = nc.subscribe(subject, {
      ...(options.queue === undefined ? {} : { queue: options.queue }),
      callback: this.#onHello,
    });
    if (options.discoverable ?? true) {
      this.#discovery = new DiscoveryResponder(nc, subject, this.instance, this.#onHello);
    }
    void this.#subscription.closed.then(() => this.close());
  }

  accept(): Promise<Transport> {
    if (this.closing) {
      return Promise.reject(new TransportClosedError("The listener is closed"));
    }
    const ready = this.#ready.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    const waiter = Promise.withResolvers<Transport>();
    this.#waiters.push(waiter);
    return waiter.promise;
  }

  protected override async release(): Promise<void> {
    try {
      this.#subscription.unsubscribe();
    } catch {
      // The NATS connection is closed already.
    }
    this.#discovery?.stop();
    const closed = new TransportClosedError("The listener is closed");
    for (const waiter of this.#waiters.splice(0)) waiter.reject(closed);
    for (const [channel, timer] of this.#opening) {
      clearTimeout(timer);
      channel.abandon();
    }
    this.#opening.clear();
    await Promise.all(this.#ready.splice(0).map((t) => t.abort(closed)));
    await flushWithin(this.#nc, this.#settings.heartbeat);
  }

  readonly #onHello = (error: Error | null, msg: NatsMessage): void => {
    if (error !== null || this.closing || msg.reply === undefined) return;
    let hello;
    try {
      hello = decodeHello(msg.data);
    } catch (cause) {
      return void respond(msg, { protocol: PROTOCOL, error: messageOf(cause) });
    }
    if ("error" in hello) return;
    if (this.#ready.length + this.#opening.size >= this.#backlog) {
      // The oldest connection still waiting for its client's Open gives way, as serve() drops
      // the oldest silent one: hellos that are never opened must not keep clients out.
      const oldest = this.#opening.keys().next();
      if (oldest.done) {
        return void respond(msg, {
          protocol: PROTOCOL,
          error: `the listener's backlog of ${this.#backlog} connections is full`,
        });
      }
      clearTimeout(this.#opening.get(oldest.value));
      this.#opening.delete(oldest.value);
      oldest.value.abandon();
    }
    const channel = new NatsChannel(this.#nc, this.#settings, forget(this.#nc));
    channel.connect(hello, `NATS ${this.subject} (from ${hello.inbox})`, () => {
      clearTimeout(this.#opening.get(channel));
      this.#opening.delete(channel);
      this.#deliver(new ByteChannelTransport(channel));
    });
    remember(this.#nc, channel);
    // Without the client's Open (it took another listener's reply, or gave up), the
    // connection is dropped without a word.
    this.#opening.set(
      channel,
      setTimeout(() => {
        this.#opening.delete(channel);
        channel.abandon();
      }, DEFAULT_NATS_CONNECT_TIMEOUT),
    );
    respond(msg, channel.hello());
  };

  #deliver(transport: Transport): void {
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter.resolve(transport);
    else this.#ready.push(transport);
  }
}

function respond(msg: NatsMessage, body: Parameters<typeof encodeHello>[0]): void {
  try {
    msg.respond(encodeHello(body));
  } catch {
    // The NATS connection closed: the client times out.
  }
}

/** The live channels of each NATS connection, failed together when it closes. */
const channelsOf = new WeakMap<NatsClient, Set<NatsChannel>>();

function remember(nc: NatsClient, channel: NatsChannel): void {
  let channels = channelsOf.get(nc);
  if (channels === undefined) {
    const set = channels = new Set();
    channelsOf.set(nc, set);
    void nc.closed().then((reason) => {
      const error = new TransportClosedError(
        `The NATS connection closed${reason instanceof Error ? `: ${reason.message}` : ""}`,
        { cause: reason },
      );
      for (const live of [...set]) live.fail(error);
    });
  }
  channels.add(channel);
}

function forget(nc: NatsClient): (channel: NatsChannel) => void {
  return (channel) => channelsOf.get(nc)?.delete(channel);
}

function settingsOf(options: NatsTransportOptions): NatsChannelSettings {
  return {
    windowBytes: byteCount(options.windowBytes, DEFAULT_NATS_WINDOW_BYTES, "windowBytes"),
    heartbeat: positive(options.heartbeat, DEFAULT_NATS_HEARTBEAT, "heartbeat"),
    inboxPrefix: options.inboxPrefix ?? "_INBOX",
  };
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive number, got ${value}`);
  }
  return value;
}

/** A window option: a whole number of bytes, at least one (see isByteCount). */
function byteCount(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!isByteCount(value, 1)) {
    throw new RangeError(`${name} must be a positive whole number of bytes, got ${value}`);
  }
  return value;
}

/** The server `nc` is connected to, as an address (for `Listener.addr`). */
function serverAddr(nc: NatsClient): Deno.NetAddr {
  const server = nc.getServer();
  const colon = server.lastIndexOf(":");
  const port = Number(server.slice(colon + 1));
  return {
    transport: "tcp",
    hostname: colon < 0 ? server : server.slice(0, colon).replace(/^\[|\]$/g, ""),
    port: colon < 0 || !Number.isInteger(port) ? 4222 : port,
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
