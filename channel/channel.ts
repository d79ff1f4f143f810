/**
 * A typed, bidirectional RPC channel over any transport and codec: both ends serve handlers
 * and call each other, with streams in both directions, cancellation, deadlines, typed
 * errors and graceful close. The wire protocol is docs/protocol.md.
 *
 * @example
 * ```ts
 * import { type CallContext, openChannel } from "@conduit/ipc/channel";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * interface Calc {
 *   add(param: { a: number; b: number }, ctx?: CallContext): number;
 *   count(to: number): AsyncIterable<number>;
 * }
 * const calc: Calc = {
 *   add: ({ a, b }) => a + b,
 *   async *count(to) {
 *     for (let i = 1; i <= to; i++) yield i;
 *   },
 * };
 *
 * const [a, b] = memoryPair();
 * const [server, client] = await Promise.all([
 *   openChannel(a, { codec: jsonCodec(), handlers: calc }),
 *   openChannel<Calc>(b, { codec: jsonCodec() }),
 * ]);
 * assert.equal(await client.remote.add({ a: 1, b: 2 }), 3);
 * assert.deepEqual(await Array.fromAsync(client.remote.count(3)), [1, 2, 3]);
 * await Promise.all([client.close(), server.closed]);
 * ```
 *
 * @module
 */

import { codecOption, integerOption as integer, positiveOption as positive } from "../_options.ts";
import { jsonCodec } from "../codecs/json.ts";
import type { Codec } from "../codecs/types.ts";
import { DEFAULT_MAX_FRAME_BYTES } from "../framing/frame_decoder.ts";
import { DEFAULT_WRITE_HIGH_WATER_MARK } from "../framing/frame_writer.ts";
import type { Transport } from "../transports/types.ts";
import { codecSlot, type MethodCodecs } from "../wires/codec_slots.ts";
import { ChannelCore, type PeerInfo } from "./_core.ts";
import { interceptedInvoke } from "./_intercepted_call.ts";
import { type OtelApi, otelApi } from "./_otel.ts";
import { type Invoke, remoteProxy } from "./_remote.ts";
import type { ErrorClass } from "../wires/error_codec.ts";
import { conduitWire } from "../wires/conduit/wire.ts";
import { MIN_SECRET_BYTES } from "../protocol/handshake.ts";
import type { WireAuth, WireFactory, WireTrace } from "../wires/types.ts";
import type {
  CheckedHandlers,
  Interceptor,
  MethodName,
  RemoteArgs,
  RemoteOf,
  RemoteReturn,
} from "./types.ts";
import { envVar } from "../_runtime.ts";

export type { Codec, PeerInfo, Transport };

/** The default {@linkcode ChannelOptions.maxInFlight}: 1024 calls. */
export const DEFAULT_MAX_IN_FLIGHT = 1024;
/** The default {@linkcode ChannelOptions.streamWindowBytes}: 256 KiB per stream. */
export const DEFAULT_STREAM_WINDOW_BYTES: number = 256 * 1024;
/** The default {@linkcode ChannelOptions.handshakeTimeout}: 10 s. */
export const DEFAULT_HANDSHAKE_TIMEOUT = 10_000;
/** The default {@linkcode ChannelOptions.defaultTimeout}: 60 s per call, streams included. */
export const DEFAULT_CALL_TIMEOUT = 60_000;
/** The default {@linkcode ChannelOptions.drainTimeout}: 5 s. */
export const DEFAULT_DRAIN_TIMEOUT = 5_000;
// The default writeHighWaterMark is the FrameWriter's own: one constant for one concept.
export { DEFAULT_WRITE_HIGH_WATER_MARK };
/** The default {@linkcode ChannelOptions.trustPeer}: false (no stack traces sent or kept). */
export const DEFAULT_TRUST_PEER = false;

/** A per-method codec: one for both directions, or one for the param and one for the result. */
export type MethodCodec = Codec<unknown> | {
  /** Encodes the param (and param stream items). @default the channel codec */
  param?: Codec<unknown>;
  /** Encodes the result (and result stream items). @default the channel codec */
  result?: Codec<unknown>;
};

/** Shared-secret authentication settings (see {@linkcode ChannelOptions.auth}). */
export interface AuthOptions {
  /**
   * The secret both peers hold: a string (its UTF-8 bytes are the key) or bytes, at least
   * `MIN_SECRET_BYTES` (16) of them, or a `TypeError` is thrown. Make it 32 random bytes
   * (`crypto.getRandomValues(new Uint8Array(32))`), not a password: a recorded handshake, or
   * the proof a client sends whoever it connects to, lets guesses be tested offline.
   */
  secret: string | Uint8Array;
  /**
   * This side's role in the handshake: the side that opened the connection is the
   * `"initiator"` and proves itself first; the side that accepted it is the `"responder"`,
   * which answers only a proof it has checked, so a peer without the secret can make it sign
   * nothing. `serve()` makes every connection it accepts the responder. A channel opened by
   * hand on an accepted connection sets `"responder"`; both sides in one role fail the
   * handshake with `auth_failed`, naming this option.
   *
   * @default {"initiator"}
   */
  role?: "initiator" | "responder";
}

/** Heartbeat settings: detect a hung peer. */
export interface HeartbeatOptions {
  /** How often to send a PING, in milliseconds. */
  interval: number;
  /**
   * Close the connection when no frame at all arrived for this long, in milliseconds, and the
   * peer had this long to answer a PING (so a stall of this side's own event loop, which delays
   * the timer, is not taken for a silent peer).
   */
  timeout: number;
}

/**
 * Options for {@linkcode openChannel}.
 *
 * @typeParam Local The handler object this side serves.
 */
export interface ChannelOptions<Local extends object = object> {
  /**
   * The channel codec; both peers must use one of the same `name`. A codec object, made by
   * its factory: `rawCodec()`, not `rawCodec` (a function is refused with a `TypeError`).
   *
   * @default {jsonCodec()}
   */
  codec?: Codec<unknown>;
  /**
   * The methods this side serves, as handlers
   * `(param, ctx) => value | Promise<value> | AsyncIterable<item>`; they serve notifications
   * too, and run with the handler object as `this`.
   *
   * Which of its functions the peer can call: the object's own function properties, and
   * those its prototype declares itself when that prototype is not `Object.prototype` — for
   * a class instance, the methods its class declares. Never `Object.prototype`'s
   * (`constructor`, `toString`, `hasOwnProperty`, `__proto__`…), never a method a base class
   * declares (re-declare it in the class, or list it on a plain object, to serve it), never
   * a getter (none runs on a peer's behalf). A plain object and an `Object.create(null)`
   * object serve their own functions.
   *
   * @example
   * ```ts
   * import { openChannel } from "@conduit/ipc/channel";
   * import { jsonCodec } from "@conduit/ipc/codecs/json";
   * import { memoryPair } from "@conduit/ipc/transports/memory";
   * import assert from "node:assert/strict";
   *
   * class Base {
   *   shutdown(): string {
   *     return "not for the peer";
   *   }
   * }
   * class Api extends Base {
   *   hello(name: string): string {
   *     return `hello ${name}`;
   *   }
   * }
   * const [a, b] = memoryPair();
   * const [server, client] = await Promise.all([
   *   openChannel(a, { codec: jsonCodec(), handlers: new Api() }),
   *   openChannel<Api>(b, { codec: jsonCodec() }),
   * ]);
   * assert.equal(await client.remote.hello("you"), "hello you");
   * await assert.rejects(client.remote.shutdown(), { name: "MethodNotFoundError" });
   * await Promise.all([client.close(), server.closed]);
   * ```
   */
  handlers?: Local;
  /**
   * Codecs for particular methods, used instead of the channel codec for that method's param
   * and result (and its stream items). Both peers must configure the same.
   */
  methodCodecs?: Readonly<Record<string, MethodCodec>>;
  /**
   * How many calls this side serves at once, and the most it keeps in flight to the peer
   * (further calls wait in a queue). A peer's call counts until its answer has been handed
   * to the transport: a call beyond the limit (from a peer that sends calls without reading
   * their answers) is held, and nothing more is read from that peer until a slot frees. It
   * bounds the peer's notifications too: while this many notification handlers have returned
   * a promise that has not settled, a further notification is held the same way.
   *
   * @default {DEFAULT_MAX_IN_FLIGHT} (1024)
   */
  maxInFlight?: number;
  /**
   * The largest frame payload accepted from the peer, in bytes (announced in the handshake).
   *
   * @default {DEFAULT_MAX_FRAME_BYTES} (64 MiB)
   */
  maxFrameBytes?: number;
  /**
   * The credit granted to each stream this side receives, in bytes: bounds the memory a
   * stream can make this side buffer.
   *
   * @default {DEFAULT_STREAM_WINDOW_BYTES} (256 KiB)
   */
  streamWindowBytes?: number;
  /**
   * How long to wait for the peer's HELLO, in milliseconds (`Infinity` for ever).
   *
   * @default {DEFAULT_HANDSHAKE_TIMEOUT} (10 s)
   */
  handshakeTimeout?: number;
  /**
   * The deadline of a call that sets no `timeout`, in milliseconds (`Infinity` for none). It
   * covers the whole call, streams included.
   *
   * @default {DEFAULT_CALL_TIMEOUT} (60 s)
   */
  defaultTimeout?: number;
  /**
   * How long `close()` lets in-flight calls finish before closing abortively, in milliseconds.
   *
   * @default {DEFAULT_DRAIN_TIMEOUT} (5 s)
   */
  drainTimeout?: number;
  /**
   * Bytes queued for the peer at which {@linkcode Channel.desiredSize} reaches zero and
   * {@linkcode Channel.ready} starts waiting; stream producers wait at it too. Lower it to
   * bound the memory a fast notification producer holds; 0 makes `ready` wait until every
   * queued frame is written.
   *
   * @default {DEFAULT_WRITE_HIGH_WATER_MARK} (1 MiB)
   */
  writeHighWaterMark?: number;
  /**
   * Close gracefully (GOODBYE, then drain) once no frame has passed in either direction and
   * nothing has been in flight for this long, in milliseconds, after the handshake. A PING
   * counts as a frame, so a peer with a {@linkcode ChannelOptions.heartbeat} is never idle.
   * A peer that reads nothing for this long while frames wait for it fails the channel
   * (abortively: nothing more reaches it), whatever it sends. `serve()` sets it for every
   * connection it accepts (`DEFAULT_IDLE_TIMEOUT`).
   *
   * @default {Infinity} (never)
   */
  idleTimeout?: number;
  /**
   * Authenticate the peer in the handshake with a shared secret (docs/protocol.md §5.1): each
   * side proves it holds the secret with an HMAC-SHA-256 bound to its role and to both HELLOs
   * (fresh nonces included), and the side that accepted the connection answers only after it
   * checked the other's proof. So the secret never crosses the wire, and a recorded, reflected
   * or altered handshake fails. No frame but the
   * handshake's (at most 1024 bytes each) is read, and no handler reached, before the peer has
   * proved it. Both sides must set the same secret; a mismatch, or a secret on one side only,
   * fails `openChannel` on both with an `AuthenticationError`. Use it for TCP (with
   * TLS where the network is not trusted: the secret proves who connects, it does not encrypt).
   *
   * @default none: no authentication
   */
  auth?: AuthOptions;
  /** Send PINGs and close if the peer goes silent. Off unless given. */
  heartbeat?: HeartbeatOptions;
  /**
   * Whether errors sent to the peer include stack traces, and the stack traces in the peer's
   * errors are kept (as `RemoteError.remoteStack`; dropped on receipt otherwise). Turn on
   * only for a peer you trust (your own worker process); keep off for sockets.
   *
   * @default {DEFAULT_TRUST_PEER} (false)
   */
  trustPeer?: boolean;
  /**
   * Whether records of one shape (the same keys in the same order) are sent with their keys
   * once, later ones with their values only (docs/protocol.md §14). Takes effect when the
   * channel codec can (the structured codec, the workers' default) and the peer's HELLO lists
   * the `shapes` feature too; otherwise bodies are the codec's plain encoding.
   *
   * @default {true}
   */
  shapes?: boolean;
  /**
   * Error classes to revive the peer's errors as (matched by `name`), instead of
   * `RemoteError`.
   */
  errorClasses?: ReadonlyArray<new (...args: never[]) => Error>;
  /**
   * Called when a notification handler throws or rejects (a notification has nobody to
   * answer to).
   *
   * @default logs with `console.error`
   */
  onNotificationError?: (error: unknown, method: string) => void;
  /**
   * Code around every call this side makes and serves, first outermost (see
   * {@linkcode Interceptor}).
   *
   * @default none
   */
  interceptors?: readonly Interceptor[];
  /**
   * The wire trace: one line per frame sent (→) or received (←), with its kind, call id,
   * method, body size, the codec's rendering of a small body (cut at 96 characters) and the
   * time since the call began; the handshake's secrets are left out. `true` writes the lines to
   * stderr (so a worker's trace reaches its parent with its stderr), a function receives them.
   * Set the environment variable `CONDUIT_TRACE=1` to trace every channel of a program that
   * may read it (`--allow-env=CONDUIT_TRACE`).
   *
   * @default off, unless `CONDUIT_TRACE` is set
   */
  trace?: boolean | ((line: string) => void);
}

/**
 * One end of a conduit connection. Both ends are alike: each serves its `handlers` and calls
 * the other's through {@linkcode remote}. Create one with {@linkcode openChannel}.
 *
 * Bytes a codec passes through as they are (the raw codec's `Uint8Array`s) are sent from
 * your buffer, not a copy, where the channel can tell when it is done with them: keep a
 * call's param unchanged until the call settles (a call cancelled while its param is still
 * being written settles once it is written), and a stream producer may refill its buffer
 * once `yield` returns (the next item is pulled only after the last one was written). A
 * notification's param or a handler's result larger than a write batch (64 KiB) is copied,
 * so it may change at once. Bytes handed over with `transfer()` are the channel's:
 * never copied, not waited for, and reused once written when they are a frame it received.
 * A received raw value is a view of the bytes that arrived.
 *
 * @typeParam Remote The handler interface the peer serves.
 *
 * @example Calling back the caller from a handler
 * ```ts
 * import { type CallContext, openChannel } from "@conduit/ipc/channel";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * interface Client {
 *   progress(percent: number): void;
 * }
 * interface Server {
 *   work(steps: number, ctx: CallContext<Client>): Promise<string>;
 * }
 * const seen: number[] = [];
 * const [a, b] = memoryPair();
 * const [server, client] = await Promise.all([
 *   openChannel<Client>(a, {
 *     codec: jsonCodec(),
 *     handlers: {
 *       async work(steps: number, ctx: CallContext<Client>) {
 *         for (let i = 1; i <= steps; i++) await ctx.channel.remote.progress(i * 100 / steps);
 *         return "done";
 *       },
 *     } satisfies Server,
 *   }),
 *   openChannel<Server>(b, {
 *     codec: jsonCodec(),
 *     handlers: { progress: (percent: number) => void seen.push(percent) } satisfies Client,
 *   }),
 * ]);
 * assert.equal(await client.remote.work(2), "done");
 * assert.deepEqual(seen, [50, 100]);
 * await Promise.all([client.close(), server.close()]);
 * ```
 */
export class Channel<Remote extends object = Record<string, never>> implements AsyncDisposable {
  /**
   * The peer's methods: `remote.add(param, { signal, timeout })` returns a promise of the
   * result, or a {@linkcode RemoteStream} when the peer's handler returns an async iterable.
   */
  readonly remote: RemoteOf<Remote>;
  readonly #core: ChannelCore;
  /** Starts a call, through the interceptors when there are any. */
  readonly #invoke: Invoke;

  /**
   * Starts the handshake on `transport`. Internal: the public way to open a channel is
   * {@linkcode openChannel}, which also waits for the handshake (the public modules export
   * `Channel` as a type only). Until {@linkcode opened} resolves, calls fail.
   *
   * @param transport The connection to the peer; the channel owns and closes it.
   * @param options The codec, handlers and limits.
   * @param wire The wire protocol: conduit's own unless another facade (`openJsonRpc`) says.
   * @param handlers Makes the handlers once the handshake succeeded (`serve()`'s factory for
   * a connection); `options.handlers` unless given.
   * @throws {RangeError} When a limit is out of range; the message names it and its value.
   */
  constructor(
    transport: Transport,
    options: ChannelOptions,
    wire: WireFactory = conduitWire,
    handlers: () => object | undefined = () => options.handlers,
  ) {
    const { codec, defaults, methodCodecs } = channelCodecs(options);
    const system = wire === conduitWire ? "conduit" : "jsonrpc";
    const otel = otelApi();
    const interceptors = otel === undefined
      ? options.interceptors
      : withTelemetry(otel, options.interceptors, system);
    const errorClasses = new Map<string, ErrorClass>();
    for (const cls of options.errorClasses ?? []) {
      const name = cls.name;
      errorClasses.set(name, cls as unknown as ErrorClass);
    }
    const heartbeat = options.heartbeat;
    if (heartbeat !== undefined) {
      positive("heartbeat.interval", heartbeat.interval);
      positive("heartbeat.timeout", heartbeat.timeout);
    }
    this.#core = new ChannelCore(
      this as unknown as Channel<Record<string, never>>,
      transport,
      {
        codec,
        methodCodecs,
        handlers,
        interceptors,
        trace: wireTrace(options.trace, codec),
        maxInFlight: integer("maxInFlight", options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT, 1),
        maxFrameBytes: integer(
          "maxFrameBytes",
          options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
          1024,
          0xffff_ffff,
        ),
        streamWindowBytes: integer(
          "streamWindowBytes",
          options.streamWindowBytes ?? DEFAULT_STREAM_WINDOW_BYTES,
          1,
        ),
        handshakeTimeout: positive(
          "handshakeTimeout",
          options.handshakeTimeout ?? DEFAULT_HANDSHAKE_TIMEOUT,
        ),
        defaultTimeout: positive("defaultTimeout", options.defaultTimeout ?? DEFAULT_CALL_TIMEOUT),
        drainTimeout: positive("drainTimeout", options.drainTimeout ?? DEFAULT_DRAIN_TIMEOUT),
        writeHighWaterMark: integer(
          "writeHighWaterMark",
          options.writeHighWaterMark ?? DEFAULT_WRITE_HIGH_WATER_MARK,
          0,
        ),
        heartbeat,
        auth: authConfig(options.auth),
        idleTimeout: positive("idleTimeout", options.idleTimeout ?? Infinity),
        trustPeer: options.trustPeer ?? DEFAULT_TRUST_PEER,
        shapes: options.shapes ?? true,
        errorClasses,
        onNotificationError: notificationErrorReporter(options.onNotificationError),
      },
      defaults,
      wire,
    );
    const core = this.#core;
    if (otel !== undefined) observeTraffic(otel, system, core);
    const invoke = this.#invoke = interceptedInvoke(
      interceptors,
      (method, param, options) => core.call(method, param, options),
    );
    this.remote = remoteProxy(invoke);
  }

  /** Resolves once the handshake succeeded; rejects with `HandshakeError` if it failed. */
  get opened(): Promise<void> {
    return this.#core.opened;
  }

  /**
   * Settles when the connection is closed and its transport released: resolves after a
   * graceful close (GOODBYE both ways; over JSON-RPC, which has none, the peer ending its
   * stream between messages with nothing in flight either way), rejects with
   * `ConnectionClosedError` otherwise.
   */
  get closed(): Promise<void> {
    return this.#core.closed;
  }

  /** The peer's codec and limits from its HELLO, once the handshake succeeded. */
  get peer(): PeerInfo | undefined {
    return this.#core.peer;
  }

  /**
   * Calls a method of the peer by name: the same as `remote[method](param, options)`.
   *
   * @param method The peer's method.
   * @param args The param (a stream for a handler taking an `AsyncIterable`) and options.
   * @returns A promise of the result, or a stream for a streaming handler.
   */
  call<K extends MethodName<Remote>>(
    method: K,
    ...args: RemoteArgs<Remote[K]>
  ): RemoteReturn<ResultOf<Remote[K]>> {
    return this.#invoke(method, args[0], args[1]) as unknown as RemoteReturn<
      ResultOf<Remote[K]>
    >;
  }

  /**
   * Hands the memory of a received `Uint8Array` back to the channel, which reads a later frame
   * of the same size into it instead of allocating: a consumer of large raw items (64 KiB and
   * more) that recycles each one once done with it keeps the receiving side from allocating a
   * fresh buffer per item, which the garbage collector reclaims only in large batches.
   *
   * After it returns true the item's bytes belong to the channel again and may be overwritten
   * by a later frame at any time, so do not read them again: the item is detached (it reads
   * as empty), and so is every other view of the frame it came in (other byte fields a codec
   * decoded from the same message). It returns false, taking nothing, for bytes the channel
   * cannot reuse safely: items smaller than 64 KiB or that arrived inside a larger read (views
   * of a buffer other frames share), bytes that did not come from this channel, or an item
   * recycled already.
   *
   * @param item A value received from this channel (a param, a result or a stream item), or
   * a view into one.
   * @returns Whether the channel took the memory.
   *
   * @example Recycling the items of a stream
   * ```ts
   * import { openChannel } from "@conduit/ipc/channel";
   * import { rawCodec } from "@conduit/ipc/codecs/raw";
   * import { connectUnix, listenUnix } from "@conduit/ipc/transports/unix";
   * import assert from "node:assert/strict";
   *
   * const handlers = {
   *   async *blobs(count: Uint8Array): AsyncIterable<Uint8Array> {
   *     for (let i = 0; i < count[0]; i++) yield new Uint8Array(1024 * 1024).fill(i);
   *   },
   * };
   * const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
   * const listener = await listenUnix(`${dir}/s`);
   * const accepted = listener.accept();
   * const connected = await connectUnix(`${dir}/s`);
   * const [client, server] = await Promise.all([
   *   openChannel<typeof handlers>(connected, { codec: rawCodec() }),
   *   openChannel(await accepted, { codec: rawCodec(), handlers }),
   * ]);
   *
   * let taken = 0;
   * let i = 0;
   * for await (const item of client.remote.blobs(new Uint8Array([8]))) {
   *   assert.equal(item.length, 1024 * 1024);
   *   assert.ok(item.every((byte) => byte === i)); // a reused buffer holds the new item only
   *   if (client.recycle(item)) taken++;
   *   assert.equal(client.recycle(item), false); // once only
   *   i++;
   * }
   * assert.equal(i, 8);
   * assert.ok(taken > 0);
   * assert.equal(client.recycle(new Uint8Array(1024 * 1024)), false); // not the channel's
   * await Promise.all([client.close(), server.closed, listener.close()]);
   * await Deno.remove(dir, { recursive: true });
   * ```
   */
  recycle(item: Uint8Array): boolean {
    return this.#core.recycle(item);
  }

  /**
   * Bytes that may still be queued for the peer before the outgoing queue reaches its
   * high-water mark ({@linkcode ChannelOptions.writeHighWaterMark}, 1 MiB by default):
   * negative past it, 0 unless the channel is open or once its transport failed. Calls and
   * streams respect it on their own; a producer of notifications checks it, as with a
   * `WritableStreamDefaultWriter`, and awaits {@linkcode ready} when it is not positive.
   */
  get desiredSize(): number {
    return this.#core.desiredSize;
  }

  /**
   * Resolves once the outgoing queue is below its high-water mark (at once while it is); a
   * new promise on each read. Rejects with `ConnectionClosedError`, as {@linkcode notify}
   * throws, once the channel is closing or closed, or its transport failed, also while
   * waiting. Before the handshake completes it waits for it.
   *
   * @example Notifying in a loop without queueing without bound
   * ```ts
   * import { openChannel } from "@conduit/ipc/channel";
   * import { rawCodec } from "@conduit/ipc/codecs/raw";
   * import { memoryPair } from "@conduit/ipc/transports/memory";
   * import assert from "node:assert/strict";
   *
   * interface Sink {
   *   chunk(bytes: Uint8Array): void;
   * }
   * let received = 0;
   * const [a, b] = memoryPair();
   * const [server, client] = await Promise.all([
   *   openChannel(a, {
   *     codec: rawCodec(),
   *     handlers: { chunk: (bytes: Uint8Array) => void (received += bytes.length) } satisfies Sink,
   *   }),
   *   openChannel<Sink>(b, { codec: rawCodec() }),
   * ]);
   * const chunk = new Uint8Array(16 * 1024);
   * let lowest = Infinity;
   * for (let i = 0; i < 1000; i++) {
   *   if (client.desiredSize <= 0) await client.ready;
   *   client.notify("chunk", chunk);
   *   lowest = Math.min(lowest, client.desiredSize);
   * }
   * assert.ok(lowest > -chunk.length - 64); // never more than one frame past the mark
   * await Promise.all([client.close(), server.closed]);
   * assert.equal(received, 1000 * chunk.length);
   * await assert.rejects(client.ready, { name: "ConnectionClosedError" });
   * ```
   */
  get ready(): Promise<void> {
    return this.#core.ready();
  }

  /**
   * Sends a notification: runs the peer's handler of that name and expects no answer. It
   * never waits: a producer that can outrun the peer awaits {@linkcode ready} when
   * {@linkcode desiredSize} is not positive.
   *
   * A write that fails closes the channel at once (pending calls fail, {@linkcode closed}
   * rejects), so a later `notify` throws. A failure is known only once the write that met it
   * settles: a notification queued while that write is in flight returns normally and is
   * lost with it. A notification that returned has reached the queue, not the peer:
   * acknowledge with a call when it matters.
   *
   * @param method The peer's method.
   * @param param Its param.
   * @throws {ConnectionClosedError} When the channel is closing or closed; after a failure,
   * its `cause` is the error the channel closed with.
   * @throws {FrameTooLargeError} When the notification exceeds the peer's `maxFrameBytes`.
   */
  notify<K extends MethodName<Remote>>(method: K, param: RemoteArgs<Remote[K]>[0]): void {
    this.#core.notify(method, param);
  }

  /**
   * Lets the channel's own timers (call deadlines, the heartbeat, the idle timeout) stop
   * keeping the process alive, as `Deno.unrefTimer` does for a timer; {@linkcode ref} undoes
   * it. The transport keeps the process alive through its own handle (`Deno.Conn.unref()`):
   * a program that lets an idle connection end with its process unrefs both. Workers do this
   * for `WorkerHandle.unref()`.
   *
   * @example Unref'd timers, then ref'd again
   * ```ts
   * import { openChannel } from "@conduit/ipc/channel";
   * import { jsonCodec } from "@conduit/ipc/codecs/json";
   * import { memoryPair } from "@conduit/ipc/transports/memory";
   * import assert from "node:assert/strict";
   *
   * const [a, b] = memoryPair();
   * const handlers = { echo: (n: number) => n };
   * const [client, server] = await Promise.all([
   *   openChannel<typeof handlers>(a, { codec: jsonCodec() }),
   *   openChannel(b, { codec: jsonCodec(), handlers }),
   * ]);
   * client.unref();
   * assert.equal(await client.remote.echo(1, { timeout: 1000 }), 1);
   * client.ref();
   * await Promise.all([client.close(), server.closed]);
   * ```
   */
  unref(): void {
    this.#core.holdProcess(false);
  }

  /** Makes the channel's timers keep the process alive again (the default); see {@linkcode unref}. */
  ref(): void {
    this.#core.holdProcess(true);
  }

  /**
   * Closes gracefully: sends GOODBYE, starts no new calls (queued ones fail), lets in-flight
   * calls in both directions finish up to `drainTimeout`, then closes the transport.
   *
   * @returns Resolves once the transport is released (never rejects).
   */
  close(): Promise<void> {
    return this.#core.close();
  }

  /**
   * Closes at once: every pending call and stream fails with `ConnectionClosedError` whose
   * cause is `reason`, handlers' signals fire, and the transport is aborted.
   *
   * @param reason Why; becomes the `cause`.
   * @returns Resolves once the transport is released.
   */
  abort(reason?: unknown): Promise<void> {
    return this.#core.abort(reason);
  }

  /** Closes gracefully (`await using channel = …`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** What handler `F` returns. */
export type ResultOf<F> = F extends (...args: never[]) => infer R ? R : never;

/**
 * Opens a channel over `transport`: sends HELLO, waits for the peer's, and checks that both
 * speak the same protocol version and codec. Call it on both ends.
 *
 * @typeParam Remote The handler interface the peer serves.
 * @typeParam Local The handler object this side serves (inferred from `handlers`).
 * @param transport The connection to the peer; the channel owns and closes it.
 * @param options The codec (JSON by default), handlers and limits.
 * @returns The open channel.
 * @throws {HandshakeError} On a version or codec mismatch, an invalid HELLO or a timeout;
 * the transport is closed by then.
 * @throws {TypeError | RangeError} For an option it refuses; the transport is closed then too.
 *
 * @example A codec mismatch fails on both sides
 * ```ts
 * import { HandshakeError, openChannel } from "@conduit/ipc/channel";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { rawCodec } from "@conduit/ipc/codecs/raw";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * const [a, b] = memoryPair();
 * const results = await Promise.allSettled([
 *   openChannel(a, { codec: jsonCodec() }),
 *   openChannel(b, { codec: rawCodec() }),
 * ]);
 * for (const result of results) {
 *   assert.equal(result.status, "rejected");
 *   assert.ok(result.reason instanceof HandshakeError);
 *   assert.equal(result.reason.code, "codec_mismatch");
 * }
 * ```
 */
export async function openChannel<
  Remote extends object = Record<string, never>,
  Local extends CheckedHandlers<Local> = object,
>(transport: Transport, options: ChannelOptions<Local> = {}): Promise<Channel<Remote>> {
  return await openOn(transport, () => new Channel<Remote>(transport, options));
}

/**
 * Makes a channel on `transport` and resolves once it is open (see {@linkcode untilOpen}).
 * Options refused before the channel took the transport release it all the same, as a failed
 * handshake does: the caller handed it over. (openChannel, openJsonRpc.)
 */
export async function openOn<Remote extends object>(
  transport: Transport,
  make: () => Channel<Remote>,
): Promise<Channel<Remote>> {
  let channel: Channel<Remote>;
  try {
    channel = make();
  } catch (error) {
    await Promise.resolve().then(() => transport.close()).catch(() => {});
    throw error;
  }
  return await untilOpen(channel);
}

/**
 * Resolves with `channel` once its handshake has succeeded; closes it and rethrows when the
 * handshake failed. (openChannel, and serveWorker, which watches the channel's end first.)
 */
export async function untilOpen<Remote extends object>(
  channel: Channel<Remote>,
): Promise<Channel<Remote>> {
  try {
    await channel.opened;
  } catch (error) {
    await channel.close();
    throw error;
  }
  return channel;
}

/** The codecs of a channel's options. */
export interface ChannelCodecs {
  /** The channel codec. */
  readonly codec: Codec<unknown>;
  /** The slots of methods without codecs of their own. */
  readonly defaults: MethodCodecs;
  /** The slots of each method with codecs of its own, if any has. */
  readonly methodCodecs: Map<string, MethodCodecs> | undefined;
}

/**
 * The channel codec (JSON unless `options.codec` is given) and the per-method codecs of
 * `options`, checked (openChannel, and serve(), which checks them before it accepts).
 *
 * @throws {TypeError} When a codec option is not a codec object, naming the option: a codec
 * factory passed uncalled (`rawCodec` for `rawCodec()`) says to call it.
 */
export function channelCodecs(
  options: Pick<ChannelOptions, "codec" | "methodCodecs">,
): ChannelCodecs {
  const codec = options.codec === undefined ? jsonCodec() : codecOption("codec", options.codec);
  const slot = codecSlot(codec);
  const defaults: MethodCodecs = { param: slot, result: slot };
  let methodCodecs: Map<string, MethodCodecs> | undefined;
  for (const [method, entry] of Object.entries(options.methodCodecs ?? {})) {
    methodCodecs ??= new Map();
    const name = `methodCodecs[${JSON.stringify(method)}]`;
    if (typeof entry === "function" || typeof entry !== "object" || entry === null) {
      codecOption(name, entry);
    }
    const pair: { param?: Codec<unknown>; result?: Codec<unknown> } =
      "encode" in entry || "decode" in entry
        ? { param: codecOption(name, entry as Codec<unknown>), result: entry as Codec<unknown> }
        : entry;
    const param = pair.param === undefined ? codec : codecOption(`${name}.param`, pair.param);
    const result = pair.result === undefined ? codec : codecOption(`${name}.result`, pair.result);
    methodCodecs.set(method, { param: codecSlot(param), result: codecSlot(result) });
  }
  return { codec, defaults, methodCodecs };
}

/** The wire's auth settings of `auth`; throws a `TypeError` for a secret or role it cannot use. */
export function authConfig(auth: AuthOptions | false | undefined): WireAuth | undefined {
  if (auth === undefined || auth === false) return undefined;
  const secret = typeof auth.secret === "string"
    ? new TextEncoder().encode(auth.secret)
    : auth.secret;
  if (!(secret instanceof Uint8Array) || secret.length < MIN_SECRET_BYTES) {
    // The length and never the bytes: a message may end up in a log.
    const what = secret instanceof Uint8Array ? `${secret.length} bytes` : typeof secret;
    throw new TypeError(
      `auth.secret must be a string or Uint8Array of ${MIN_SECRET_BYTES} bytes or more, not ` +
        `${what}: short ones can be guessed; use crypto.getRandomValues(new Uint8Array(32))`,
    );
  }
  const role = auth.role ?? "initiator";
  if (role !== "initiator" && role !== "responder") {
    throw new TypeError(
      `auth.role must be "initiator" or "responder", not ${JSON.stringify(role)}`,
    );
  }
  // A copy of its own: a Node Buffer's slice() is a view of the caller's bytes, which the
  // caller may zero or reuse once it handed them over.
  return { secret: new Uint8Array(secret), role };
}

/**
 * The reporter of notification handlers' failures (`ChannelOptions.onNotificationError`, by
 * default to `console.error`), kept from throwing: a failing reporter must not take the
 * connection down, nor the answers of a JSON-RPC batch being read.
 */
export function notificationErrorReporter(
  given: ((error: unknown, method: string) => void) | undefined,
): (error: unknown, method: string) => void {
  const report = given ?? reportNotificationError;
  return (error, method) => {
    try {
      report(error, method);
    } catch {
      // Nowhere left to report it.
    }
  };
}

function reportNotificationError(error: unknown, method: string): void {
  console.error(`conduit: the notification handler "${method}" failed:`, error);
}

/** The environment variable that turns on the wire trace of every channel. */
const TRACE_ENV = "CONDUIT_TRACE";
/** Whether `CONDUIT_TRACE` asks for a trace: read once, and only where it may be read. */
let traceFromEnv: boolean | undefined;

/** The channel's wire trace, from its `trace` option or `CONDUIT_TRACE`. */
function wireTrace(
  option: boolean | ((line: string) => void) | undefined,
  codec: Codec<unknown>,
): WireTrace | undefined {
  const on = option ?? (traceFromEnv ??= envAsksForTrace());
  if (on === false) return undefined;
  return {
    sink: typeof on === "function" ? on : (line) => console.error(line),
    render: (body) => renderValue(codec.decode(body)),
  };
}

function envAsksForTrace(): boolean {
  const value = envVar(TRACE_ENV);
  return value !== undefined && value !== "" && value !== "0";
}

function renderValue(value: unknown): string {
  if (value instanceof Uint8Array) return `<${value.length} bytes>`;
  try {
    return JSON.stringify(value, (_, item) => typeof item === "bigint" ? `${item}n` : item) ??
      String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** The telemetry module, loaded by the first channel that needs it. */
let telemetryModule: Promise<typeof import("./_telemetry.ts")> | undefined;

/**
 * `interceptors`, behind the one that traces and measures each call (the runtime traces: see
 * _otel.ts). Until its module is loaded, the telemetry interceptor waits for it; then it is
 * the loaded one.
 */
function withTelemetry(
  api: OtelApi,
  interceptors: readonly Interceptor[] | undefined,
  system: "conduit" | "jsonrpc",
): readonly Interceptor[] {
  const telemetry: { -readonly [K in keyof Interceptor]: Interceptor[K] } = {};
  const loaded = (telemetryModule ??= import("./_telemetry.ts")).then((module) => {
    const interceptor = module.telemetryInterceptor(api, system);
    telemetry.call = interceptor.call;
    telemetry.handle = interceptor.handle;
    return interceptor;
  });
  telemetry.call = (call, next) => loaded.then((interceptor) => interceptor.call!(call, next));
  telemetry.handle = (call, next) => loaded.then((interceptor) => interceptor.handle!(call, next));
  return [telemetry, ...(interceptors ?? [])];
}

/** Counts the bytes `core` sends and receives in the runtime's meter (see _telemetry.ts). */
function observeTraffic(api: OtelApi, system: "conduit" | "jsonrpc", core: ChannelCore): void {
  void (telemetryModule ??= import("./_telemetry.ts")).then((module) =>
    module.observeTraffic(api, system, () => core.traffic, core.closed)
  );
}
