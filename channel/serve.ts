/**
 * {@linkcode serve}: a server loop over any {@linkcode Listener} (Unix socket, TCP, TLS, NATS).
 * It accepts connections concurrently, opens one channel per connection with shared handlers or
 * handlers made for each connection, and keeps every connection's failure to itself: a peer that
 * sends garbage, aborts, or says nothing affects neither the other connections nor the server.
 * It caps the connections it holds, and more tightly those still in their handshake, closes idle
 * ones, and shuts down gracefully on `close()` or an `AbortSignal`.
 *
 * @example
 * ```ts
 * import { openChannel, serve } from "@conduit/ipc/channel";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { connectUnix, listenUnix } from "@conduit/ipc/transports/unix";
 * import assert from "node:assert/strict";
 *
 * const handlers = { add: ({ a, b }: { a: number; b: number }) => a + b };
 * const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
 * const server = serve(await listenUnix(`${dir}/s`), { codec: jsonCodec(), handlers });
 *
 * const client = await openChannel<typeof handlers>(await connectUnix(`${dir}/s`), {
 *   codec: jsonCodec(),
 * });
 * assert.equal(await client.remote.add({ a: 1, b: 2 }), 3);
 * await server.close(); // GOODBYE to every client, drain, close, socket file removed
 * await client.closed;
 * await assert.rejects(Deno.stat(`${dir}/s`), Deno.errors.NotFound);
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @module
 */

import { integerOption, positiveOption } from "../_options.ts";
import { TransportClosedError } from "../errors.ts";
import type { Listener, Transport } from "../transports/types.ts";
import { dropHandshake, heardFrom } from "./_core.ts";
import {
  authConfig,
  type AuthOptions,
  Channel,
  channelCodecs,
  type ChannelOptions,
} from "./channel.ts";
import type { CheckedHandlers } from "./types.ts";
import { connectionGone, within } from "../_runtime.ts";

export type { Listener };

/**
 * The default {@linkcode ServeOptions.maxConnections}: 200 connections held at once.
 *
 * Each connection holds one file descriptor, and a Deno process that runs out of them panics
 * and exits (a plain `Deno.listen` server does too), so the cap must stay below the process's
 * limit with room for what the process opens besides: its own files, worker pipes (three per
 * worker), outgoing connections, and the runtime's own descriptors (a few dozen). 200 is below
 * macOS's default soft limit (256) with that room, and a fifth of Linux's usual 1024. Raise it
 * together with `ulimit -n`.
 */
export const DEFAULT_MAX_CONNECTIONS = 200;

/**
 * The default {@linkcode ServeOptions.idleTimeout} of a served connection: 5 minutes.
 *
 * Long enough for a client that keeps a connection between bursts of calls, short enough that
 * connections left open by clients that went away without closing do not accumulate up to
 * the connection cap. A client that must keep a quiet connection open sets a heartbeat: its
 * PINGs count as frames.
 */
export const DEFAULT_IDLE_TIMEOUT: number = 5 * 60_000;

/**
 * The default {@linkcode ServeOptions.maxHandshakes}: 128 connections in their handshake at once.
 *
 * A connection that has not finished its handshake has proved nothing, so these get a smaller
 * share of {@linkcode DEFAULT_MAX_CONNECTIONS}: silent connections never take the slots of
 * authenticated ones. When the share is full, a new connection takes the place of the oldest
 * handshaking one as soon as that one has sent nothing for 100 ms, or has been in its handshake
 * for half a second: a client sends its HELLO as soon as it is connected, so connections that
 * never send one cannot keep out a client that does (with the share full of them, a new client
 * waits for about `maxHandshakes` of them per 100 ms ahead of it in the backlog); the half second
 * lets a burst of good clients connecting together wait in the backlog rather than push each
 * other out.
 */
export const DEFAULT_MAX_HANDSHAKES = 128;

/**
 * The default {@linkcode ServeOptions.handshakeTimeout} of a served connection: 5 s, half a
 * plain channel's (`DEFAULT_HANDSHAKE_TIMEOUT`).
 *
 * A client that connects to a server sends its HELLO at once, so its handshake takes a round
 * trip or two (and TLS's own before them); 5 s leaves room for a slow link and a loaded server
 * while silent connections give their slots back soon. A flood does not wait for it: the
 * handshake cap drops the oldest handshaking connection for a new one
 * ({@linkcode DEFAULT_MAX_HANDSHAKES}).
 */
export const DEFAULT_SERVE_HANDSHAKE_TIMEOUT = 5_000;

/**
 * How long a connection keeps its place in its handshake before a newer one may take it when
 * `maxHandshakes` or `maxConnections` is reached: a good client sends its HELLO at once, and
 * the server reads it within this even when a burst of clients keeps it busy.
 */
const HANDSHAKE_GRACE_MS = 500;

/**
 * How long a connection that has sent nothing keeps its place in its handshake when
 * `maxHandshakes` or `maxConnections` is reached. A client sends its HELLO as soon as it is
 * connected, before the server accepts it, so a good client's bytes are read within this even
 * on a loaded server; a flood of connections that never speak is dropped at this pace. Not for
 * TLS, whose own handshake comes first: there every connection has the full grace.
 */
const SILENT_GRACE_MS = 100;

/** A connection in its handshake: when it began, and how long it may stay silent if need be. */
interface Handshaking {
  readonly since: number;
  readonly silentGrace: number;
}

/** How long the accept loop waits after a failed accept (e.g. out of file descriptors). */
const ACCEPT_RETRY_MS = 100;
/**
 * How long a connection dropped for a newer one has to write its GOODBYE before its transport
 * is dropped: a write a socket takes is done in far less.
 */
const DROP_GRACE_MS = 100;

/** One accepted connection, as handler factories and error reports see it. */
export interface Connection {
  /** The connection's number: 1 for the first the server accepted, then increasing. */
  readonly id: number;
  /** Aborted once the connection is closed and its transport released. */
  readonly signal: AbortSignal;
  /**
   * The client's address, for logs, rate limits or allow-lists: a `Deno.NetAddr` over TCP and
   * TLS (`hostname`, `port`), a `Deno.UnixAddr` over a Unix socket; undefined where the
   * listener's transport has none (NATS).
   *
   * @example Refusing clients by address, and logging who failed
   * ```ts
   * import { openChannel, serve } from "@conduit/ipc/channel";
   * import { connectTcp, listenTcp } from "@conduit/ipc/transports/tcp";
   * import assert from "node:assert/strict";
   *
   * const seen: string[] = [];
   * const listener = await listenTcp({ port: 0 });
   * const { port } = listener.addr as Deno.NetAddr;
   * const server = serve(listener, {
   *   auth: false, // loopback only
   *   handlers: (connection) => {
   *     const addr = connection.remoteAddr as Deno.NetAddr;
   *     seen.push(addr.hostname);
   *     return { whoAmI: () => `${addr.hostname}:${addr.port}` };
   *   },
   * });
   * const client = await openChannel<{ whoAmI(): string }>(await connectTcp({ port }), {});
   * const local = (await client.remote.whoAmI()).split(":");
   * assert.equal(local[0], "127.0.0.1");
   * assert.deepEqual(seen, ["127.0.0.1"]);
   * await server.close();
   * await client.closed;
   * ```
   */
  readonly remoteAddr: Deno.Addr | undefined;
}

/**
 * Options for {@linkcode serve}: the options of each connection's channel, and the server's.
 *
 * @typeParam Local The handler object each connection serves.
 * @typeParam Remote The handler interface the clients serve (for `onOpen`).
 */
export interface ServeOptions<
  Local extends object = object,
  Remote extends object = Record<string, never>,
> extends Omit<ChannelOptions<Local>, "handlers" | "handshakeTimeout" | "auth"> {
  /**
   * The methods served: one handler object shared by every connection, or a function that
   * makes one for each connection (for per-connection state). The function runs once the
   * client's handshake succeeded, authentication included: a client that fails it or says
   * nothing makes none. A function throwing refuses that connection only (the client gets
   * GOODBYE `aborted`; `onError` gets the error).
   */
  handlers?: Local | ((connection: Connection) => Local);
  /**
   * Authenticate each client in the handshake with a shared secret (see
   * {@linkcode ChannelOptions.auth}), or `false` to serve without it. A TCP or TLS listener
   * (its `encryption` is set) needs one or the other: without `auth`, any process that can
   * connect calls the handlers — on loopback, any local user's — so `serve()` throws a
   * `TypeError` naming `auth: false` rather than do it silently. Unix sockets (owner-only
   * files) and NATS listeners (the NATS server's permissions) need neither. A secret under 16
   * bytes throws a `TypeError`, as in {@linkcode AuthOptions.secret}. `serve()` copies
   * the secret: zeroing or reusing the caller's bytes afterwards changes no connection's.
   *
   * @default none: no authentication (refused on TCP and TLS listeners)
   */
  auth?: AuthOptions | false;
  /**
   * Serve a plain TCP listener bound to a non-loopback address with `auth: false`: any host
   * that reaches the address calls the handlers, and everything crosses the network in clear
   * text. Without it `serve()` throws a `TypeError` for such a listener; bind to loopback, set
   * `auth`, or listen with TLS instead. No effect elsewhere.
   *
   * @default {false}
   */
  insecure?: boolean;
  /**
   * The most connections held at once, handshaking ones included. When it is reached, a new
   * connection takes the place of the oldest one still in its handshake; when every one held
   * has finished its handshake, the server stops accepting (new connections wait in the OS's
   * backlog) until one closes.
   *
   * @default {DEFAULT_MAX_CONNECTIONS} (200)
   */
  maxConnections?: number;
  /**
   * The most connections held at once that have not finished their handshake (part of
   * `maxConnections`). A new connection that comes with this many in their handshake takes
   * the place of the oldest of them once that one has sent nothing for 100 ms (on TLS, whose
   * own handshake comes first, half a second) or has been in its handshake for half a second
   * (until then it waits, unless a handshake ends); the one dropped is reported to `onError`.
   * So a flood of connections that never send a HELLO cannot keep out a client that does.
   *
   * @default {DEFAULT_MAX_HANDSHAKES} (128)
   */
  maxHandshakes?: number;
  /**
   * How long a connection may take to finish its handshake, in milliseconds, before it is
   * closed (`Infinity` for ever). Shorter than a plain channel's: a client connecting to a
   * server sends its HELLO at once.
   *
   * @default {DEFAULT_SERVE_HANDSHAKE_TIMEOUT} (5 s)
   */
  handshakeTimeout?: number;
  /**
   * Close a connection gracefully (GOODBYE, then drain) once, after its handshake, no frame has
   * passed in either direction and nothing has been in flight for this long, in milliseconds.
   *
   * @default {DEFAULT_IDLE_TIMEOUT} (5 minutes)
   */
  idleTimeout?: number;
  /** Aborting it shuts the server down as {@linkcode Server.close} does. */
  signal?: AbortSignal;
  /** Called with each connection's channel once its handshake succeeded. */
  onOpen?: (channel: Channel<Remote>, connection: Connection) => void;
  /**
   * Called when a connection ends other than by a graceful close (a failed handshake, a
   * protocol error, an aborted transport), and when accepting fails. The server goes on. A
   * failed handshake is reported as the client's `openChannel` fails: an
   * `AuthenticationError` for a client without the secret (`instanceof` works), a
   * `HandshakeError` otherwise (its `code` says why: `handshake_timeout`, `server_busy`,
   * `codec_mismatch`…); any other end as the `ConnectionClosedError` the channel closed with.
   *
   * @default ignores them: on a hostile network they are routine.
   */
  onError?: (error: unknown, connection: Connection | undefined) => void;
}

/** A running server (see {@linkcode serve}). */
export interface Server extends AsyncDisposable {
  /** The address the listener is bound to. */
  readonly addr: Deno.Addr;
  /** The connections held now, handshaking ones included. */
  readonly connections: number;
  /** Resolves once the server has shut down and released everything (never rejects). */
  readonly finished: Promise<void>;
  /**
   * Shuts down gracefully: stops accepting and closes the listener (removing a Unix socket
   * file), sends GOODBYE on every open connection and lets in-flight calls finish within each
   * channel's `drainTimeout`, fails connections still in their handshake, and resolves once
   * every connection is closed. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Serves `listener`: accepts its connections concurrently and opens a channel on each with
 * `options`. The server owns the listener and closes it on shutdown.
 *
 * @typeParam Local The handler object each connection serves.
 * @typeParam Remote The handler interface the clients serve (for `onOpen`).
 * @param listener Where connections come from.
 * @param options The channel options of each connection and the server's own.
 * @returns The running server.
 * @throws {RangeError} When an option is out of range.
 * @throws {TypeError} When a codec option is not a codec object (see
 * {@linkcode ChannelOptions.codec}).
 * @throws {TypeError} When `listener` is a TCP or TLS listener and `auth` is not set (pass
 * `auth: false` to serve without it), or a plain TCP one off loopback has `auth: false` without
 * `insecure: true` (see {@linkcode ServeOptions.auth}). The listener is still the caller's.
 *
 * @example Handlers made for each connection, shut down with a signal
 * ```ts
 * import { openChannel, serve } from "@conduit/ipc/channel";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { connectTcp, listenTcp } from "@conduit/ipc/transports/tcp";
 * import assert from "node:assert/strict";
 *
 * interface Counter {
 *   next(): number;
 * }
 * const stop = new AbortController();
 * const listener = await listenTcp({ port: 0 });
 * const { port } = listener.addr as Deno.NetAddr;
 * const server = serve(listener, {
 *   codec: jsonCodec(),
 *   auth: false, // plain TCP on loopback: any local process may call
 *   signal: stop.signal,
 *   handlers: (): Counter => {
 *     let count = 0;
 *     return { next: () => ++count };
 *   },
 * });
 * const a = await openChannel<Counter>(await connectTcp({ port }), { codec: jsonCodec() });
 * const b = await openChannel<Counter>(await connectTcp({ port }), { codec: jsonCodec() });
 * assert.equal(await a.remote.next(), 1);
 * assert.equal(await a.remote.next(), 2);
 * assert.equal(await b.remote.next(), 1); // its own counter
 * stop.abort();
 * await server.finished;
 * await Promise.all([a.closed, b.closed]);
 * ```
 *
 * @example TCP without `auth` is refused until the choice is explicit
 * ```ts
 * import { serve } from "@conduit/ipc/channel";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { listenTcp } from "@conduit/ipc/transports/tcp";
 * import assert from "node:assert/strict";
 *
 * const handlers = { ping: () => "pong" };
 * const listener = await listenTcp({ hostname: "0.0.0.0", port: 0 });
 * assert.throws(() => serve(listener, { codec: jsonCodec(), handlers }), /auth: false/);
 * // Off loopback, plain TCP without auth takes a second, louder word.
 * const options = { codec: jsonCodec(), handlers, auth: false } as const;
 * assert.throws(() => serve(listener, options), /insecure: true/);
 * const server = serve(listener, { ...options, insecure: true });
 * await server.close();
 * ```
 */
export function serve<
  Local extends CheckedHandlers<Local> = object,
  Remote extends object = Record<string, never>,
>(listener: Listener, options: ServeOptions<Local, Remote> = {}): Server {
  return new ServerLoop(listener, options);
}

/** The accept loop and the set of connections it holds. */
class ServerLoop<Local extends object, Remote extends object> implements Server {
  readonly #listener: Listener;
  readonly #options: ServeOptions<Local, Remote>;
  readonly #channelOptions: ChannelOptions<Local>;
  readonly #maxConnections: number;
  readonly #maxHandshakes: number;
  /**
   * How long a connection that has sent nothing keeps its place when one must be dropped:
   * {@linkcode SILENT_GRACE_MS}, or the full grace where the first bytes come late (TLS).
   */
  readonly #silentGrace: number;
  /** Each connection held, and when it is released (its `closed` settled and handled). */
  readonly #held = new Map<Channel<Remote>, Promise<void>>();
  /** The connections held that are still in their handshake, oldest first, and when each began. */
  readonly #handshaking = new Map<Channel<Remote>, Handshaking>();
  readonly #finished = Promise.withResolvers<void>();
  readonly #stopping = Promise.withResolvers<void>();
  #closing: Promise<void> | undefined;
  #nextId = 0;
  /**
   * Settles when a connection closes or ends its handshake (or the server stops): the accept
   * loop waits on it.
   */
  #room = Promise.withResolvers<void>();

  constructor(listener: Listener, options: ServeOptions<Local, Remote>) {
    checkExposure(listener, options);
    this.#listener = listener;
    this.#options = options;
    this.#maxConnections = integerOption(
      "maxConnections",
      options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
      1,
    );
    this.#maxHandshakes = integerOption(
      "maxHandshakes",
      options.maxHandshakes ?? DEFAULT_MAX_HANDSHAKES,
      1,
    );
    this.#silentGrace = listener.encryption === "tls" ? HANDSHAKE_GRACE_MS : SILENT_GRACE_MS;
    const {
      maxConnections: _,
      maxHandshakes: __,
      signal: ___,
      onOpen: ____,
      onError: _____,
      insecure: ______,
      auth,
      ...channel
    } = options;
    this.#channelOptions = {
      ...channel,
      // Checked here, so a codec option that is not a codec fails serve(), not each connection.
      codec: channelCodecs(options).codec,
      handlers: undefined,
      // Checked here too: an unusable secret fails serve(), not each connection.
      auth: auth === false ? undefined : checkedAuth(responderAuth(auth)),
      handshakeTimeout: positiveOption(
        "handshakeTimeout",
        options.handshakeTimeout ?? DEFAULT_SERVE_HANDSHAKE_TIMEOUT,
      ),
      idleTimeout: positiveOption("idleTimeout", options.idleTimeout ?? DEFAULT_IDLE_TIMEOUT),
    };
    const signal = options.signal;
    if (signal !== undefined) {
      const onAbort = () => void this.close();
      if (signal.aborted) queueMicrotask(onAbort);
      else {
        signal.addEventListener("abort", onAbort, { once: true });
        this.#finished.promise.then(() => signal.removeEventListener("abort", onAbort));
      }
    }
    this.#acceptLoop().then(() => this.close());
  }

  get addr(): Deno.Addr {
    return this.#listener.addr;
  }

  get connections(): number {
    return this.#held.size;
  }

  get finished(): Promise<void> {
    return this.#finished.promise;
  }

  close(): Promise<void> {
    return this.#closing ??= this.#shutdown();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #acceptLoop(): Promise<void> {
    const stopped = this.#stopping.promise;
    while (this.#closing === undefined) {
      if (!this.#hasRoom()) {
        await this.#room.promise;
        continue;
      }
      let transport: Transport;
      try {
        transport = await this.#listener.accept();
      } catch (error) {
        if (this.#closing !== undefined) return;
        if (error instanceof TransportClosedError) return;
        this.#report(error, undefined);
        // A connection reset before it was accepted is that one's: take the next at once (a
        // pause would let a client that resets connections keep everyone out). Out of file
        // descriptors, or anything else: wait a little and go on, rather than spin or stop.
        if (!connectionGone(error)) await within(stopped, ACCEPT_RETRY_MS, undefined);
        continue;
      }
      const pressed = await this.#makeRoom();
      if (this.#closing !== undefined) {
        await transport.abort().catch(() => {});
        return;
      }
      this.#open(transport, pressed);
    }
  }

  /** Whether a new connection can be held: below the cap, or one to drop is handshaking. */
  #hasRoom(): boolean {
    return this.#held.size < this.#maxConnections || this.#handshaking.size > 0;
  }

  /**
   * Makes room for an accepted connection within both caps: drops the oldest connection in its
   * handshake whose grace is over, and waits until one's is, or until a connection ends. A
   * connection let in by dropping another that has sent nothing has {@linkcode SILENT_GRACE_MS}:
   * a client sends its HELLO as soon as it connects, so its bytes are waiting when the server
   * accepts it; any other has {@linkcode HANDSHAKE_GRACE_MS}. Returns whether it dropped one
   * (the new connection is let in under pressure). The oldest, not a
   * random one nor the new one: a client that answers at once gets in while silent ones push
   * each other out. The grace keeps a burst of good clients (a thousand reconnecting at once)
   * from pushing each other out: they wait in the backlog instead, as for `maxConnections`.
   */
  async #makeRoom(): Promise<boolean> {
    let pressed = false;
    while (this.#closing === undefined) {
      const full = this.#held.size >= this.#maxConnections;
      if (!full && this.#handshaking.size < this.#maxHandshakes) return pressed;
      if (this.#handshaking.size === 0) {
        // Handshakes that ended while accept() waited filled the server with open
        // connections: this one waits (as it would have in the backlog) until one closes.
        await this.#room.promise;
        continue;
      }
      const drop = this.#nextToDrop(performance.now());
      if (typeof drop === "number") {
        await within(this.#room.promise, drop, undefined);
        continue;
      }
      this.#handshaking.delete(drop);
      pressed = true;
      // Told why, then gone within DROP_GRACE_MS, written or not: its place is waited for.
      dropHandshake(
        drop,
        "server_busy",
        `Dropped during its handshake for a newer connection: maxHandshakes (${this.#maxHandshakes}) or maxConnections (${this.#maxConnections}) reached`,
        DROP_GRACE_MS,
      );
      // Below maxConnections once it is released, not before.
      if (full) await this.#held.get(drop);
    }
    return pressed;
  }

  /**
   * The oldest connection in its handshake whose grace is over, or how many milliseconds until
   * one's is.
   */
  #nextToDrop(now: number): Channel<Remote> | number {
    let wait = HANDSHAKE_GRACE_MS;
    for (const [channel, { since, silentGrace }] of this.#handshaking) {
      const grace = heardFrom(channel) ? HANDSHAKE_GRACE_MS : silentGrace;
      const left = since + grace - now;
      if (left <= 0) return channel;
      if (left < wait) wait = left;
    }
    return wait;
  }

  /**
   * Opens a channel on an accepted connection. `pressed`: it was let in by dropping another,
   * so it has only {@linkcode SILENT_GRACE_MS} to speak; the first ones of a burst, let in while
   * there was room, have the full grace (a client busy opening many connections may be slow to
   * write its HELLOs).
   */
  #open(transport: Transport, pressed: boolean): void {
    const connection = new AcceptedConnection(++this.#nextId, transport.remoteAddr);
    const handlers = this.#options.handlers;
    let channel: Channel<Remote>;
    try {
      // A factory runs once the client has authenticated: one that fails makes nothing.
      channel = new Channel<Remote>(
        transport,
        this.#channelOptions,
        undefined,
        typeof handlers === "function" ? () => handlers(connection) : () => handlers,
      );
    } catch (error) {
      connection.release();
      this.#report(error, connection);
      transport.abort(error).catch(() => {});
      return;
    }
    this.#handshaking.set(channel, {
      since: performance.now(),
      silentGrace: pressed ? this.#silentGrace : HANDSHAKE_GRACE_MS,
    });
    // A failed handshake is reported as what openChannel throws on the client's side (an
    // AuthenticationError, a HandshakeError), not as the ConnectionClosedError it closes with.
    let handshakeFailure: unknown;
    channel.opened.then(() => {
      this.#handshakeEnded(channel);
      if (this.#closing !== undefined) {
        channel.close();
        return;
      }
      const onOpen = this.#options.onOpen;
      if (onOpen === undefined) return;
      try {
        onOpen(channel, connection);
      } catch (error) {
        this.#report(error, connection);
      }
    }, (error) => {
      handshakeFailure = error;
      this.#handshakeEnded(channel);
    });
    this.#held.set(
      channel,
      channel.closed.catch((error) => this.#report(handshakeFailure ?? error, connection)).finally(
        () => {
          this.#held.delete(channel);
          connection.release();
          this.#signalRoom();
        },
      ),
    );
  }

  #handshakeEnded(channel: Channel<Remote>): void {
    if (this.#handshaking.delete(channel)) this.#signalRoom();
  }

  /** Wakes the accept loop when it waits for room. */
  #signalRoom(): void {
    const room = this.#room;
    this.#room = Promise.withResolvers();
    room.resolve();
  }

  async #shutdown(): Promise<void> {
    this.#stopping.resolve();
    this.#room.resolve();
    await this.#listener.close().catch((error) => this.#report(error, undefined));
    // Each channel's close is bounded: by its drainTimeout once open, at once in a handshake.
    // (A channel the accept loop opened as the listener closed is in the next round.)
    while (this.#held.size > 0) {
      const held = [...this.#held];
      for (const [channel] of held) channel.close();
      await Promise.all(held.map(([, released]) => released));
    }
    this.#finished.resolve();
  }

  #report(error: unknown, connection: Connection | undefined): void {
    const onError = this.#options.onError;
    if (onError === undefined) return;
    try {
      onError(error, connection);
    } catch {
      // A failing reporter must not stop the server.
    }
  }
}

/**
 * One accepted connection as handler factories and reports see it. Its signal is made when
 * first read: most connections (every refused handshake) never need one, and aborting one
 * makes an exception object with a stack.
 */
class AcceptedConnection implements Connection {
  readonly id: number;
  readonly remoteAddr: Deno.Addr | undefined;
  #controller: AbortController | undefined;
  #released = false;

  constructor(id: number, remoteAddr: Deno.Addr | undefined) {
    this.id = id;
    this.remoteAddr = remoteAddr;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#released) this.#controller.abort();
    }
    return this.#controller.signal;
  }

  /** The connection is closed and its transport released: its signal fires. */
  release(): void {
    this.#released = true;
    this.#controller?.abort();
  }
}

/**
 * `auth`, once the channel's checker took it (a `TypeError` for an unusable secret), holding
 * its own copy of the secret's bytes: every connection uses the secret `serve()` was given,
 * whatever later becomes of the caller's buffer (zeroed after use, or reused for another key).
 */
function checkedAuth<T extends AuthOptions>(auth: T | undefined): T | undefined {
  const config = authConfig(auth);
  return config && { ...auth!, secret: config.secret };
}

/** serve()'s side of every handshake is the responder's (docs/protocol.md §5.1). */
function responderAuth<T extends { role?: string }>(auth: T | undefined): T | undefined {
  if (auth === null) throw new TypeError("serve(): auth must be { secret } or false, not null");
  if (auth === undefined || typeof auth !== "object") return auth;
  if (auth.role !== undefined && auth.role !== "responder") {
    throw new TypeError(
      `serve() accepts connections, so its auth.role is "responder", not ${
        JSON.stringify(auth.role)
      }`,
    );
  }
  return { ...auth, role: "responder" };
}

/**
 * Refuses to serve a network listener without authentication unless told so: `auth: false` on
 * any TCP or TLS listener, and `insecure: true` as well for plain TCP off loopback (Redis's
 * protected mode, made explicit). Two opt-outs, because they accept two risks: `auth: false`
 * lets other local users' processes in, which the error for a missing `auth` suggests; moving
 * that listener to `0.0.0.0` later would let in every host on the network, in clear text, and
 * must not follow from the same word.
 */
function checkExposure(
  listener: Listener,
  options: Pick<ServeOptions, "auth" | "insecure">,
): void {
  const encryption = listener.encryption;
  if (encryption === undefined || options.auth !== undefined && options.auth !== false) return;
  const addr = listener.addr as Deno.NetAddr;
  const where = `${encryption === "tls" ? "TLS" : "TCP"} at ${formatHost(addr)}`;
  const loopback = isLoopback(addr.hostname);
  if (options.auth === undefined) {
    throw new TypeError(
      `serve() on ${where} without auth: set auth: { secret } (clients prove they hold it), ` +
        `or auth: false to serve any process that connects${
          loopback ? " (on loopback, any local user's)" : ""
        }`,
    );
  }
  if (encryption === "none" && !loopback && options.insecure !== true) {
    throw new TypeError(
      `serve() on plain TCP at ${formatHost(addr)} with auth: false serves any host that ` +
        `reaches it, in clear text: set auth: { secret }, listen with listenTls or on ` +
        `loopback, or pass insecure: true as well`,
    );
  }
}

/** Whether `hostname` (an address the listener is bound to) is a loopback address. */
function isLoopback(hostname: string): boolean {
  return /^(::ffff:)?127\./i.test(hostname) || hostname === "::1";
}

function formatHost({ hostname, port }: Deno.NetAddr): string {
  return hostname.includes(":") ? `[${hostname}]:${port}` : `${hostname}:${port}`;
}
