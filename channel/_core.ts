// The engine behind a Channel: wires the lifecycle, the calls in both directions, the
// deadlines and the heartbeat to a wire protocol, runs the read loop, and closes. Incoming
// frames are parsed and dispatched synchronously, a whole transport chunk per loop; outgoing
// frames are queued by the wire's outbox, which coalesces the frames of one turn into one
// transport write, started early in a burst (FrameWriter's firstWriteBytes), so the peer
// works on the first answers while the rest of a read is dispatched. The engine is given its
// wire and knows it only through wires/types.ts.
// The lifecycle's state machine is _lifecycle.ts, the channel's deadline timer _deadlines.ts.

import type { Codec } from "../codecs/types.ts";
import { FrameTooLargeError, FramingError } from "../errors.ts";
import type { PeerInfo } from "../protocol/handshake.ts";
import { ProtocolError } from "../protocol/format.ts";
import type { Transport } from "../transports/types.ts";
import { type MethodCodecs, shapingCodec } from "../wires/codec_slots.ts";
import type { ConnectionTimers, HeartbeatConfig } from "./_connection_timers.ts";
import { IncomingCalls } from "./_incoming_calls.ts";
import { isAsyncIterable, type OutgoingCall, OutgoingCalls } from "./_outgoing_calls.ts";
import type { LifecycleEvents, Wire, WireAuth, WireFactory, WireTrace } from "../wires/types.ts";
import type { ErrorClass } from "../wires/error_codec.ts";
import {
  AuthenticationError,
  ConnectionClosedError,
  DrainTimeoutError,
  HandshakeError,
} from "./errors.ts";
import type { CallOptions, Interceptor } from "./types.ts";
import { fireAt, within } from "../_runtime.ts";
import { printable } from "../_utf8.ts";
import { CLOSED, CLOSING, Lifecycle, OPEN } from "./_lifecycle.ts";
import { Deadlines } from "./_deadlines.ts";

export type { PeerInfo };

/** Resolved channel options. */
export interface CoreConfig {
  codec: Codec<unknown>;
  methodCodecs: Map<string, MethodCodecs> | undefined;
  /**
   * Makes the methods this side serves: called once the handshake (authentication included)
   * succeeded, so a peer that fails it makes nothing; a throw refuses that peer.
   */
  handlers: () => object | undefined;
  /** Code around every call made and served. */
  interceptors: readonly Interceptor[] | undefined;
  /** The wire trace, when the channel traces. */
  trace: WireTrace | undefined;
  maxInFlight: number;
  maxFrameBytes: number;
  streamWindowBytes: number;
  handshakeTimeout: number;
  defaultTimeout: number;
  drainTimeout: number;
  writeHighWaterMark: number;
  heartbeat: HeartbeatConfig | undefined;
  /** The shared secret the peer must prove it holds, and this side's role (`ChannelOptions.auth`). */
  auth?: WireAuth;
  /** Close gracefully after this long with no frame and nothing in flight (Infinity: never). */
  idleTimeout: number;
  trustPeer: boolean;
  /** `ChannelOptions.shapes`. */
  shapes: boolean;
  errorClasses: Map<string, ErrorClass>;
  onNotificationError: (error: unknown, method: string) => void;
}

/** The most slots of the id rings that hold the calls in flight (more wait in a Map). */
const MAX_ID_RING = 1024;
/**
 * How long a closing channel waits for its writer to flush (or, aborting, for the write in
 * flight) before it drops the transport: a peer that reads nothing holds neither for longer.
 */
const FAILURE_FLUSH_MS = 1000;

/** Each channel's engine, for what serve() asks of it beyond the public API. */
const cores = new WeakMap<object, ChannelCore>();

/**
 * Ends `channel`'s handshake with GOODBYE `code` (`serve()` dropping it for a newer connection,
 * whose place waits for it), and drops its transport if it has not closed within `ms`: a write
 * to a peer may never end (a TLS client that never says hello takes none), and the newer
 * connection must not wait on the flush bounds for it. Nothing once the handshake is over.
 */
export function dropHandshake(channel: object, code: string, message: string, ms: number): void {
  const core = cores.get(channel);
  if (core === undefined || !core.handshaking) return;
  core.onRefused(code, message, true);
  void within(core.settled().then(() => true, () => true), ms, false).then((closed) => {
    if (!closed) core.dropTransport();
  });
}

/**
 * Whether `channel` has received any bytes from its peer: `serve()` drops a connection that
 * has sent nothing before one that is in the middle of its handshake.
 */
export function heardFrom(channel: object): boolean {
  return (cores.get(channel)?.heardFrom) ?? false;
}

/** The channel's engine (one per connection). */
export class ChannelCore implements LifecycleEvents {
  /** The peer's HELLO, once the handshake succeeded. */
  peer: PeerInfo | undefined;
  readonly #config: CoreConfig;
  readonly #transport: Transport;
  readonly #life = new Lifecycle();
  readonly #opened = Promise.withResolvers<void>();
  readonly #closed = Promise.withResolvers<void>();
  readonly #wire: Wire;
  readonly #outgoing: OutgoingCalls;
  readonly #incoming: IncomingCalls;
  readonly #deadlines: Deadlines;
  readonly #reading: Promise<void>;
  /** The heartbeat and idle timer, once loaded: only a channel that sets either loads them. */
  #timers: ConnectionTimers | undefined;
  #closeController: AbortController | undefined;
  #shutdown: Promise<void> | undefined;
  readonly #codecsFor: (method: string) => MethodCodecs;

  constructor(
    channel: object,
    transport: Transport,
    config: CoreConfig,
    defaultCodecs: MethodCodecs,
    makeWire: WireFactory,
  ) {
    this.#transport = transport;
    this.#config = config;
    cores.set(channel, this);
    // Both are reported through the public API; keep them from surfacing as unhandled.
    this.#opened.promise.catch(() => {});
    this.#closed.promise.catch(() => {});
    const wire = makeWire(transport, {
      codec: config.codec.name,
      maxFrameBytes: config.maxFrameBytes,
      maxInFlight: config.maxInFlight,
      streamWindowBytes: config.streamWindowBytes,
      writeHighWaterMark: config.writeHighWaterMark,
      trustPeer: config.trustPeer,
      shapes: config.shapes ? shapingCodec(config.codec) : undefined,
      errorClasses: config.errorClasses,
      auth: config.auth,
      trace: config.trace,
      onWriteFailure: (error) =>
        this.#fail(new ConnectionClosedError("Writing to the transport failed", { cause: error })),
    });
    this.#wire = wire;
    const methodCodecs = config.methodCodecs;
    const codecsFor = this.#codecsFor = methodCodecs === undefined
      ? () => defaultCodecs
      : (method: string) => methodCodecs.get(method) ?? defaultCodecs;
    const ring = Math.min(config.maxInFlight, MAX_ID_RING);
    const onIdle = () => {
      this.#timers?.active();
      this.#maybeFinishClose();
    };
    this.#deadlines = new Deadlines((now) =>
      Math.min(this.#outgoing.expire(now), this.#incoming.expire(now))
    );
    this.#outgoing = new OutgoingCalls(wire, this.#life, this.#deadlines, {
      maxInFlight: config.maxInFlight,
      ring,
      defaultTimeout: config.defaultTimeout,
      streamWindowBytes: config.streamWindowBytes,
      codecsFor,
      notOpen: () => this.#notOpenError(),
      onIdle,
    });
    this.#incoming = new IncomingCalls(wire, this.#life, this.#deadlines, {
      channel,
      maxInFlight: config.maxInFlight,
      ring,
      streamWindowBytes: config.streamWindowBytes,
      codecsFor,
      onNotificationError: config.onNotificationError,
      closeSignal: () => (this.#closeController ??= new AbortController()).signal,
      onIdle,
      interceptors: config.interceptors,
    });
    wire.attach({ outgoing: this.#outgoing, incoming: this.#incoming, lifecycle: this });
    wire.start();
    const handshakeTimeout = config.handshakeTimeout;
    this.#life.startHandshake(fireAt(performance.now() + handshakeTimeout, () => {
      this.#life.timerFired();
      this.onRefused(
        "handshake_timeout",
        `The handshake did not complete within handshakeTimeout (${handshakeTimeout} ms)`,
        true,
      );
    }));
    this.#reading = this.#readLoop();
  }

  /** Whether the handshake is under way. */
  get handshaking(): boolean {
    return this.#life.handshaking;
  }

  /** Drops the transport now, a write in flight with it (the channel has failed already). */
  dropTransport(): void {
    void this.#transport.abort().catch(() => {});
  }

  /** Settles once the channel closed and its transport was let go. */
  settled(): Promise<void> {
    return this.closed.then(() => this.#shutdown, () => this.#shutdown);
  }

  /** Whether any bytes came from the peer. */
  get heardFrom(): boolean {
    return this.#deadlines.receivedAt > 0;
  }

  /** Bytes sent to the peer and received from it so far. */
  get traffic(): { readonly sent: number; readonly received: number } {
    return { sent: this.#wire.outbox.bytesWritten, received: this.#deadlines.bytesReceived };
  }

  /** Settles when the handshake succeeds or fails. */
  get opened(): Promise<void> {
    return this.#opened.promise;
  }

  /** Resolves after a graceful close, rejects with ConnectionClosedError otherwise. */
  get closed(): Promise<void> {
    return this.#closed.promise;
  }

  // ---------------------------------------------------------------- the public operations

  /** Starts a call; the returned object is both the promise and the stream of its result. */
  call(method: string, param: unknown, options: CallOptions | undefined): OutgoingCall {
    this.#timers?.active();
    return this.#outgoing.call(method, param, options);
  }

  /** Sends a notification. */
  notify(method: string, param: unknown): void {
    if (!this.#life.open) throw this.#notOpenError();
    if (isAsyncIterable(param)) {
      throw new TypeError(`A notification cannot carry a stream (method "${method}")`);
    }
    this.#wire.outbox.sendNotify(method, this.#codecsFor(method).param, param);
    this.#timers?.active();
  }

  /** The outbox's room below its high-water mark while open, else 0. */
  get desiredSize(): number {
    return this.#life.open ? this.#wire.outbox.desiredSize : 0;
  }

  /**
   * Resolves once the outgoing queue is below its high-water mark; rejects with a
   * ConnectionClosedError, like `notify`, once the channel is no longer open.
   */
  ready(): Promise<void> {
    if (this.#life.open) {
      return this.#wire.outbox.desiredSize > 0 ? Promise.resolve() : this.#readyWhileOpen();
    }
    if (this.#life.handshaking) {
      return this.opened.then(() => this.ready(), () => Promise.reject(this.#notOpenError()));
    }
    return Promise.reject(this.#notOpenError());
  }

  /** Hands a received item's memory back to the frame decoder (see Channel.recycle). */
  recycle(item: Uint8Array): boolean {
    return this.#wire.decoder.recycle(item);
  }

  /** Starts a graceful close: goodbye, then drain. Resolves once closed. */
  close(): Promise<void> {
    if (this.#life.handshaking) {
      this.#fail(new ConnectionClosedError("The channel was closed during the handshake"));
    } else if (this.#life.open) {
      this.#startClosing();
    }
    return this.settled();
  }

  /** Closes at once: pending calls fail with ConnectionClosedError (cause: `reason`). */
  abort(reason: unknown): Promise<void> {
    this.#fail(new ConnectionClosedError("The channel was aborted", { cause: reason }));
    return this.settled();
  }

  /**
   * Whether the channel's timers (deadlines, heartbeat) keep the process alive; an unref'd
   * worker's channel lets go of them while idle.
   */
  holdProcess(hold: boolean): void {
    this.#deadlines.hold(hold);
    this.#timers?.hold(hold);
  }

  // ---------------------------------------------------------------- LifecycleEvents

  onEstablished(peer: PeerInfo): boolean {
    if (!this.#life.handshaking) return false;
    let handlers: object | undefined;
    try {
      handlers = this.#config.handlers();
    } catch (error) {
      // The peer is told the connection ends, not why: the error is this side's own.
      this.#fail(
        new ConnectionClosedError("Making this connection's handlers failed", { cause: error }),
        { code: "aborted", reason: "The peer could not serve this connection" },
        true,
        error,
      );
      return false;
    }
    if (!this.#life.enter(OPEN)) return false;
    this.#incoming.serve(handlers);
    this.peer = peer;
    this.#outgoing.setPeer(peer);
    this.#incoming.setPeer(peer);
    const config = this.#config;
    if (config.heartbeat !== undefined || config.idleTimeout !== Infinity) {
      import("./_connection_timers.ts").then(
        ({ ConnectionTimers }) => this.#startTimers(new ConnectionTimers(this.#deadlines)),
        (error) =>
          this.#fail(
            new ConnectionClosedError("Loading the channel's heartbeat and idle timers failed", {
              cause: error,
            }),
          ),
      );
    }
    this.#opened.resolve();
    return true;
  }

  /** Starts the heartbeat and the idle timer, unless the channel closed while they loaded. */
  #startTimers(timers: ConnectionTimers): void {
    if (this.#life.closed) return;
    this.#timers = timers;
    if (!this.#deadlines.held) timers.hold(false);
    const heartbeat = this.#config.heartbeat;
    if (heartbeat !== undefined) {
      timers.startHeartbeat(heartbeat, {
        ping: () => this.#wire.outbox.sendPing(),
        timedOut: (silent) =>
          this.#fail(
            new ConnectionClosedError(
              `No frame from the peer for ${
                Math.round(silent)
              } ms (heartbeat timeout ${heartbeat.timeout} ms)`,
            ),
            { code: "heartbeat_timeout", reason: `silent for ${Math.round(silent)} ms` },
            true,
          ),
      });
    }
    const idleTimeout = this.#config.idleTimeout;
    const outbox = this.#wire.outbox;
    timers.startIdle(idleTimeout, {
      busy: () => this.#outgoing.size > 0 || this.#incoming.size > 0,
      // Counted as the system takes each part of a write where the transport can tell.
      unwritten: () =>
        outbox.desiredSize < this.#config.writeHighWaterMark
          ? this.#transport.bytesSent ?? outbox.bytesWritten
          : undefined,
      idle: (stalled) => {
        const reason = `for its idleTimeout (${idleTimeout} ms)`;
        // Nothing can be said to a peer that reads nothing: dropped, not closed gracefully.
        if (stalled) this.#fail(new ConnectionClosedError(`The peer read nothing ${reason}`));
        // The reason travels in the GOODBYE: the peer's next call quotes it.
        else if (this.#life.open) this.#startClosing(`idle ${reason}`);
      },
    });
  }

  onRefused(code: string, message: string, goodbye: boolean): void {
    if (!this.#life.handshaking) return;
    // The message may quote the peer (its GOODBYE, its HELLO's values): escaped, as in onGoodbye.
    const error = handshakeError(code, printable(message));
    this.#fail(
      new ConnectionClosedError("The handshake failed", { cause: error }),
      goodbye ? { code, reason: message } : undefined,
      goodbye,
      error,
    );
  }

  onGoodbye(code: string | undefined, reason: string | undefined): void {
    this.#life.peerSaidGoodbye({ code, reason });
    if (code !== undefined) {
      // The peer is closing because of a failure; nothing pending will complete.
      // The peer's words, escaped: a log shows them as they are and cannot be forged by them.
      const [shown, why] = [printable(code), printable(reason ?? "")];
      const cause = code === "protocol_error"
        ? new ProtocolError(`The peer reported a protocol error: ${why}`)
        : new ConnectionClosedError(`The peer closed the connection (${shown}): ${why}`);
      const goodbye = { code, reason: reason ?? "" };
      const said = `The peer closed the connection (${shown})${why === "" ? "" : `: ${why}`}`;
      this.#fail(new ConnectionClosedError(said, { cause, goodbye }));
      return;
    }
    if (this.#life.open) this.#startClosing();
    else this.#maybeFinishClose();
  }

  // ---------------------------------------------------------------- reading

  async #readLoop(): Promise<void> {
    const wire = this.#wire;
    const decoder = wire.decoder;
    const reader = wire.reader();
    const deadlines = this.#deadlines;
    const life = this.#life;
    const incoming = this.#incoming;
    try {
      if (wire.ready !== undefined) await wire.ready;
      while (true) {
        const value = await reader.readBytes();
        if (value === null) break;
        // One clock read per chunk: the receipt time of every frame in it.
        deadlines.receivedAt = performance.now();
        deadlines.bytesReceived += value.length;
        decoder.push(value);
        let frame: Uint8Array | undefined;
        while ((frame = decoder.next()) !== undefined) {
          wire.read(frame);
          if (life.closed) return;
          // The peer sent more calls than it has read answers for: read nothing more from it
          // until one is answered and written (the rest of the chunk waits too), or only a
          // little more (see heldUntil).
          const held = incoming.holding ? incoming.heldUntil() : undefined;
          if (held !== undefined) {
            wire.outbox.writeQueued();
            await held;
            if (life.closed) return;
          }
        }
      }
      if (life.closed) return;
      decoder.end();
      this.#onEnd();
    } catch (error) {
      if (life.closed) return;
      if (error instanceof ProtocolError) this.#protocolFailure(error);
      else if (error instanceof FrameTooLargeError && life.handshaking) {
        // The wire reads with the smallest limit until the handshake is done.
        const message = `A frame of ${error.size} bytes before the handshake, where frames ` +
          `are at most ${error.limit} bytes until the peer's HELLO is accepted`;
        this.#protocolFailure(new ProtocolError(message, { cause: error }));
      } else if (error instanceof FramingError) {
        this.#protocolFailure(new ProtocolError(error.message, { cause: error }));
      } else {
        this.#fail(new ConnectionClosedError("The transport failed", { cause: error }));
      }
    }
  }

  #onEnd(): void {
    const life = this.#life;
    if (life.closing && life.peerClosing) this.#maybeFinishClose();
    if (life.closed) return;
    // A peer without a GOODBYE to send (JSON-RPC) says goodbye by ending its input: a graceful
    // close when nothing is in flight either way. Else the end fails what is: its calls still
    // running or held stop (their answers would wait on a peer that may read no more).
    const incoming = this.#incoming;
    if (
      this.#wire.endIsGoodbye && !life.handshaking && this.#outgoing.size === 0 &&
      incoming.size === 0 && !incoming.holding
    ) return this.onGoodbye(undefined, undefined);
    const message = life.handshaking
      ? "The peer closed the connection during the handshake"
      : this.#wire.peerEnded?.() ??
        (life.peerClosing
          ? "The peer closed the connection after its GOODBYE with calls still in flight"
          : "The peer closed the connection without a GOODBYE");
    this.#fail(new ConnectionClosedError(message));
  }

  #protocolFailure(error: ProtocolError): void {
    this.#fail(
      new ConnectionClosedError(`Protocol error: ${error.message}`, { cause: error }),
      { code: "protocol_error", reason: error.message },
      true,
    );
  }

  // ---------------------------------------------------------------- closing

  /** Says GOODBYE (with `reason`, if any) and drains. */
  #startClosing(reason?: string): void {
    const drain = this.#config.drainTimeout;
    this.#life.enter(
      CLOSING,
      fireAt(performance.now() + drain, () => {
        this.#life.timerFired();
        const why = `drainTimeout (${drain} ms) passed with calls in flight`;
        this.#fail(new DrainTimeoutError(drain), { code: "aborted", reason: why }, true);
      }),
    );
    this.#life.sayGoodbye(reason);
    this.#wire.outbox.sendGoodbye(undefined, reason);
    this.#incoming.refuseHeld();
    this.#outgoing.failQueued(
      new ConnectionClosedError("The channel closed before the call was sent"),
    );
    this.#maybeFinishClose();
  }

  #maybeFinishClose(): void {
    if (
      !this.#life.closing || !this.#life.peerClosing || this.#outgoing.size > 0 ||
      this.#incoming.size > 0
    ) return;
    this.#life.enter(CLOSED);
    this.#stopTimers();
    this.#closeController?.abort(new ConnectionClosedError("The channel closed"));
    this.#shutdown = this.#closeTransport(true);
    this.#shutdown.then(() => this.#closed.resolve());
  }

  /**
   * Fails everything pending with `error` and closes the transport: after saying `goodbye`
   * when given, flushing when `graceful`. During the handshake, `opened` rejects with
   * `handshakeError` when given (a refusal's, or the handler factory's own error).
   */
  #fail(
    error: ConnectionClosedError,
    goodbye?: { code: string; reason: string },
    graceful = false,
    handshakeError?: unknown,
  ): void {
    const wasHandshake = this.#life.handshaking;
    if (!this.#life.fail(error)) return;
    this.#stopTimers();
    // Sent even after this side's own GOODBYE (docs/protocol.md §10): a GOODBYE with a code
    // tells the peer why the connection ends.
    if (goodbye !== undefined) {
      this.#life.sayGoodbye();
      this.#wire.outbox.sendGoodbye(goodbye.code, goodbye.reason);
    }
    this.#outgoing.failAll(error);
    this.#incoming.dropAll(error);
    this.#closeController?.abort(error);
    if (wasHandshake) {
      const cause = error.cause ?? error;
      this.#opened.reject(
        handshakeError ??
          new HandshakeError(
            cause instanceof ProtocolError ? "protocol_error" : "closed",
            `The handshake failed: ${error.message}`,
            { cause },
          ),
      );
    }
    this.#shutdown = this.#closeTransport(graceful);
    this.#shutdown.then(() => this.#closed.reject(error));
  }

  async #closeTransport(graceful: boolean): Promise<void> {
    const outbox = this.#wire.outbox;
    if (graceful) {
      const closing = outbox.close().then(() => true, () => false);
      const flushed = await within(closing, FAILURE_FLUSH_MS, false);
      if (flushed) await this.#transport.close().catch(() => {});
    }
    // The writer's abort lets the write in flight end first (a GOODBYE still reaches a refused
    // peer); a write the peer never reads ends when the transport is dropped.
    await within(outbox.abort().catch(() => {}), FAILURE_FLUSH_MS, undefined);
    await this.#transport.abort().catch(() => {});
    await this.#wire.reader().cancel().catch(() => {});
    await this.#reading;
  }

  #stopTimers(): void {
    this.#deadlines.stop();
    this.#timers?.stop();
  }

  // A writer whose queue drains after close() started would resolve, yet notify would throw:
  // the wait ends as soon as the channel leaves OPEN, whichever comes first.
  #readyWhileOpen(): Promise<void> {
    return Promise.race([this.#wire.outbox.ready, this.#life.leavesOpen()]).then(
      () => {
        if (!this.#life.open) throw this.#notOpenError();
      },
      (error) => {
        throw !this.#life.open
          ? this.#notOpenError()
          : new ConnectionClosedError("Writing to the transport failed", { cause: error });
      },
    );
  }

  #notOpenError(): ConnectionClosedError {
    const life = this.#life;
    const peerReason = life.peerGoodbye?.reason;
    // Why it closed, when a GOODBYE said: the peer's (an idle server's), or this side's own.
    const why = peerReason
      ? `: the peer said goodbye: ${printable(peerReason)}`
      : life.goodbyeReason
      ? `: this side said goodbye: ${life.goodbyeReason}`
      : "";
    return new ConnectionClosedError(
      life.handshaking
        ? "The channel is not open yet: await openChannel()"
        : life.closing
        ? `The channel is closing${why}`
        : `The channel is closed${why}`,
      life.failure && { cause: life.failure },
    );
  }
}

/** A failed handshake's error: an AuthenticationError for the authentication codes. */
function handshakeError(code: string, message: string): HandshakeError {
  return code === "auth_failed" || code === "auth_required"
    ? new AuthenticationError(code, message)
    : new HandshakeError(code, message);
}
