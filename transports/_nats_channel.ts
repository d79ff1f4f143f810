// One conduit connection over NATS as a ByteChannel: its own sequence numbers and a heartbeat
// (_nats_link.ts), a credit window per direction (_credit_window.ts), over two inbox subjects
// (one per end). The message format and the rules are described in transports/nats.ts's
// module doc.
//
// An end's lifecycle is one state, its transitions in TRANSITIONS:
//
//   UNCONNECTED ──connect()──▶ OPEN (the client's end)
//        └─────connect(…, onOpen)──▶ AWAITING_OPEN ──the client's Open──▶ OPEN
//   OPEN ──the peer's Bye or Reset──▶ PEER_CLOSED
//   any but FAILED, RELEASED ──fail()──▶ FAILED;  any but RELEASED ──close(), abandon()──▶ RELEASED
//
// What the end failed with stays in `#failure` once it is released.

import type { NatsClient, NatsMessage, NatsSubscription } from "./_nats_client.ts";
import { createInbox } from "@nats-io/transport-node";
import { TransportClosedError } from "../errors.ts";
import type { ByteChannel } from "./_byte_channel_transport.ts";
import {
  creditMessage,
  HEADER_BYTES,
  type Hello,
  Kind,
  PROTOCOL,
  readCredit,
} from "./_nats_wire.ts";
import { NatsMessagesLostError, NatsPeerGoneError } from "./_nats_errors.ts";
import { ChunkQueue, flushWithin } from "./_nats_flow.ts";
import { ReceiveCredit, SendCredit } from "./_credit_window.ts";
import { NatsLink } from "./_nats_link.ts";
import { printable } from "../_utf8.ts";

/** The settings one end keeps; the peer learns them in the handshake. */
export interface NatsChannelSettings {
  windowBytes: number;
  heartbeat: number;
  inboxPrefix: string;
}

/** Bodies below this size are copied out of the client's read buffer: a small chunk must not pin it. */
const COPY_BELOW_BYTES = 4096;
/**
 * What each message that came before connect() counts, besides its payload, against the
 * window: the client's message objects cost memory too, Data or not.
 */
const EARLY_MESSAGE_BYTES = 256;
/** The peer is gone once nothing came from it for this many of its heartbeat intervals. */
const MISSED_HEARTBEATS = 3;

/** Before connect(): what comes is kept for then. */
const UNCONNECTED = 0;
/** The listener's end, connected, until the client's Open comes. */
const AWAITING_OPEN = 1;
const OPEN = 2;
/** The peer sent Bye (or Reset): it reads nothing any more. */
const PEER_CLOSED = 3;
const FAILED = 4;
const RELEASED = 5;

const TRANSITIONS: readonly (readonly number[])[] = [
  /* UNCONNECTED */ [AWAITING_OPEN, OPEN, FAILED, RELEASED],
  /* AWAITING_OPEN */ [OPEN, FAILED, RELEASED],
  /* OPEN */ [PEER_CLOSED, FAILED, RELEASED],
  /* PEER_CLOSED */ [FAILED, RELEASED],
  /* FAILED */ [RELEASED],
  /* RELEASED */ [],
];

/** A connection's end: reads its inbox, publishes to the peer's. */
export class NatsChannel implements ByteChannel {
  label: string;
  /** The subject this end reads. */
  readonly inbox: string;
  readonly #nc: NatsClient;
  readonly #settings: NatsChannelSettings;
  readonly #subscription: NatsSubscription;
  #state = UNCONNECTED;
  #failure: Error | undefined;
  /** The numbered messages to and from the peer, from connect() on. */
  #link: NatsLink | undefined;
  /** What the peer allows this end to send; its window once connected. */
  readonly #sendCredit = new SendCredit(0);
  readonly #receiveCredit: ReceiveCredit;
  readonly #queue = new ChunkQueue((chunk) => this.#take(chunk));
  /**
   * Messages that came before `connect()`, and their cost. A listener sends nothing before the
   * client's Open, so these come from anyone who saw the client's inbox in its hello; they are
   * kept, but no more than the window.
   */
  #early: { readonly messages: NatsMessage[]; bytes: number } | undefined = {
    messages: [],
    bytes: 0,
  };
  /** On the listener's side until the client's Open came: called then. */
  #onOpen: (() => void) | undefined;
  readonly #onStop: ((channel: NatsChannel) => void) | undefined;

  constructor(
    nc: NatsClient,
    settings: NatsChannelSettings,
    onStop?: (channel: NatsChannel) => void,
  ) {
    this.#nc = nc;
    this.#settings = settings;
    this.#receiveCredit = new ReceiveCredit(settings.windowBytes);
    this.#onStop = onStop;
    this.inbox = createInbox(settings.inboxPrefix);
    this.label = `NATS inbox ${this.inbox}`;
    this.#subscription = nc.subscribe(this.inbox, { callback: this.#onMessage });
  }

  /** What this end tells its peer in the handshake. */
  hello(): Hello {
    return {
      protocol: PROTOCOL,
      inbox: this.inbox,
      window: this.#settings.windowBytes,
      heartbeat: this.#settings.heartbeat,
    };
  }

  /**
   * Starts talking to the peer that sent `peer`. The client's end (no `onOpen`) sends Open at
   * once; the listener's end sends nothing, not even a Ping, until that Open came, and then
   * calls `onOpen`: a listener whose reply lost the race (several answered) stays silent and
   * never disturbs the client's connection to the one that won.
   * @throws {TransportClosedError} When the end failed before (see `#keepEarly`).
   */
  connect(peer: Hello, label: string, onOpen?: () => void): void {
    this.label = label;
    if (!this.#enter(onOpen === undefined ? OPEN : AWAITING_OPEN)) {
      // Failed while the handshake ran (a flood of early messages): say so, not a dead end.
      if (this.#failure !== undefined) throw this.#failure;
      return;
    }
    this.#link = new NatsLink(this.#nc, peer);
    this.#sendCredit.grant(peer.window);
    this.#onOpen = onOpen;
    if (onOpen !== undefined) return;
    this.#send(this.#link.message(Kind.Open));
    this.#startHeartbeat();
    const early = this.#early!;
    this.#early = undefined;
    for (const msg of early.messages) this.#onMessage(null, msg);
  }

  /** Releases the subscription without a word to the peer (a connection never opened). */
  abandon(): void {
    if (!this.#enter(RELEASED)) return;
    this.#stop(new TransportClosedError(`${this.label} was never opened`));
  }

  read(): Promise<Uint8Array | null> {
    return this.#queue.read();
  }

  write(chunk: Uint8Array): Promise<void> | undefined {
    if (this.#state !== OPEN && this.#state !== AWAITING_OPEN) this.#throwUnwritable();
    if (chunk.length === 0) return undefined;
    const piece = this.#maxPiece();
    if (chunk.length <= piece && chunk.length <= this.#sendCredit.available) {
      this.#sendData(chunk);
      return undefined;
    }
    return this.#writeInPieces(chunk, piece);
  }

  closeWrite(): Promise<void> {
    if (this.#state === OPEN || this.#state === AWAITING_OPEN) {
      this.#send(this.#link!.message(Kind.End));
    }
    return Promise.resolve();
  }

  async close(abortive: boolean): Promise<void> {
    const notify = this.#state === OPEN || this.#state === AWAITING_OPEN;
    if (!this.#enter(RELEASED)) return;
    if (notify) {
      try {
        this.#send(this.#link!.message(abortive ? Kind.Reset : Kind.Bye));
      } catch {
        // The NATS connection is closed: the peer learns it from its heartbeat.
      }
    }
    this.#stop(new TransportClosedError(`${this.label} is closed`));
    this.#queue.end();
    // The last messages are on the server before close() resolves, unless NATS is away.
    if (notify) await flushWithin(this.#nc, MISSED_HEARTBEATS * this.#settings.heartbeat);
  }

  /** Ends the connection with `error`: reads and writes fail with it, the peer gets a Reset. */
  fail(error: Error): void {
    const notify = this.#state === OPEN || this.#state === AWAITING_OPEN;
    if (!this.#enter(FAILED)) return;
    this.#failure = error;
    if (notify && !this.#nc.isClosed()) {
      try {
        const reason = new TextEncoder().encode(resetReason(error));
        const reset = this.#link!.message(Kind.Reset, reason.length);
        reset.set(reason, HEADER_BYTES);
        this.#send(reset);
      } catch {
        // The peer learns it from its heartbeat.
      }
    }
    this.#stop(error);
    this.#queue.fail(error);
  }

  /** Moves to `next`; false (and nothing changes) when TRANSITIONS has no such move. */
  #enter(next: number): boolean {
    if (!TRANSITIONS[this.#state].includes(next)) return false;
    this.#state = next;
    return true;
  }

  async #writeInPieces(chunk: Uint8Array, piece: number): Promise<void> {
    for (let offset = 0; offset < chunk.length;) {
      await this.#sendCredit.wait();
      if (this.#state !== OPEN && this.#state !== AWAITING_OPEN) this.#throwUnwritable();
      const size = Math.min(chunk.length - offset, piece, this.#sendCredit.available);
      this.#sendData(chunk.subarray(offset, offset + size));
      offset += size;
    }
  }

  /** Why this end takes no writes (in any state but OPEN and AWAITING_OPEN). */
  #throwUnwritable(): never {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#state === RELEASED) throw new TransportClosedError(`${this.label} is closed`);
    if (this.#state === PEER_CLOSED) {
      throw new TransportClosedError(`${this.label}: the peer closed the connection`);
    }
    throw new TransportClosedError(`${this.label} is not open yet`);
  }

  /** The largest Data body the server takes now (a reconnect may change its limit). */
  #maxPiece(): number {
    const maxPayload = this.#nc.info?.max_payload ?? 1024 * 1024;
    return Math.min(maxPayload - HEADER_BYTES, this.#link!.peer.window);
  }

  #sendData(bytes: Uint8Array): void {
    // A copy: NATS keeps the payload queued after publish() returns, and the writer may
    // reuse its buffer once the write settled.
    const data = this.#link!.message(Kind.Data, bytes.length);
    data.set(bytes, HEADER_BYTES);
    this.#send(data);
    this.#sendCredit.spend(bytes.length);
  }

  #send(payload: Uint8Array, reply?: string): void {
    try {
      this.#link!.publish(payload, reply);
    } catch (cause) {
      const error = new TransportClosedError(
        `Publish to ${this.label} failed: ${cause instanceof Error ? cause.message : cause}`,
        { cause },
      );
      this.fail(error);
      throw error;
    }
  }

  /** A read took `chunk`: grant the peer more once enough was read. */
  #take(chunk: Uint8Array): void {
    const grant = this.#receiveCredit.consume(chunk.length);
    if (grant !== undefined && (this.#state === OPEN || this.#state === AWAITING_OPEN)) {
      try {
        this.#send(creditMessage(this.#link!.nextSeq(), grant));
      } catch {
        // fail() has run: the next read reports it.
      }
    }
  }

  #startHeartbeat(): void {
    this.#link!.startHeartbeat(
      this.#settings.heartbeat,
      MISSED_HEARTBEATS * this.#link!.peer.heartbeat,
      {
        ping: (): void => {
          try {
            // With our inbox as reply subject: the server answers 503 if the peer's is gone.
            this.#send(this.#link!.message(Kind.Ping), this.inbox);
          } catch {
            // fail() has run.
          }
        },
        gone: (silentMs: number): void => {
          this.fail(
            new NatsPeerGoneError(`${this.label}: nothing heard from the peer for ${silentMs} ms`),
          );
        },
      },
    );
  }

  readonly #onMessage = (error: Error | null, msg: NatsMessage): void => {
    if (this.#state >= FAILED) return;
    if (this.#state === UNCONNECTED && error === null) return this.#keepEarly(msg);
    if (error !== null) {
      this.fail(
        new TransportClosedError(
          `${this.label}: the subscription failed: ${printable(error.message)}`,
          {
            cause: error,
          },
        ),
      );
      return;
    }
    try {
      this.#receive(msg);
    } catch (cause) {
      this.fail(
        cause instanceof TransportClosedError
          ? cause
          : new TransportClosedError(`${this.label}: ${printable(String(cause))}`, { cause }),
      );
    }
  };

  /** Keeps a message that came before connect(), failing the end once they pass the window. */
  #keepEarly(msg: NatsMessage): void {
    const early = this.#early!;
    early.bytes += msg.data.length + EARLY_MESSAGE_BYTES;
    if (early.bytes <= this.#settings.windowBytes) return void early.messages.push(msg);
    this.#early = undefined;
    this.fail(
      new TransportClosedError(
        `${this.label}: ${early.bytes} bytes came before the handshake's reply, more than ` +
          `the window of ${this.#settings.windowBytes}`,
      ),
    );
  }

  #receive(msg: NatsMessage): void {
    const { kind, body } = this.#link!.receive(msg, this.label);
    if (this.#state === AWAITING_OPEN || kind === Kind.Open) return this.#receiveOpen(kind);
    if (kind === Kind.Data) return this.#receiveData(body);
    if (kind === Kind.Credit) {
      this.#sendCredit.grant(readCredit(body));
    } else if (kind === Kind.End || kind === Kind.Bye) {
      this.#queue.end();
      if (kind === Kind.Bye && this.#enter(PEER_CLOSED)) {
        this.#stop(new TransportClosedError(`${this.label}: the peer closed the connection`));
      }
    } else if (kind === Kind.Reset) {
      const reason = new TextDecoder().decode(body);
      this.#enter(PEER_CLOSED);
      throw lostByPeer(this.label, reason) ?? new TransportClosedError(
        `${this.label}: the peer aborted the connection${
          reason === "" ? "" : `: ${printable(reason)}`
        }`,
      );
    } else if (kind !== Kind.Ping) {
      throw new TransportClosedError(`${this.label}: unknown message kind ${kind}`);
    }
  }

  /** The listener's end waits for Open first; it comes once, and only from the client. */
  #receiveOpen(kind: number): void {
    const onOpen = this.#onOpen;
    if (kind !== Kind.Open || onOpen === undefined || !this.#enter(OPEN)) {
      throw new TransportClosedError(`${this.label}: message kind ${kind} out of turn`);
    }
    this.#onOpen = undefined;
    this.#early = undefined;
    this.#startHeartbeat();
    onOpen();
  }

  #receiveData(body: Uint8Array): void {
    if (this.#queue.ended) throw new TransportClosedError(`${this.label}: data after the end`);
    const excess = this.#receiveCredit.receive(body.length);
    if (excess !== undefined) {
      throw new TransportClosedError(`${this.label}: the peer sent past its window (${excess})`);
    }
    // Plain Uint8Arrays, never the client's Buffer views.
    const chunk = body.length < COPY_BELOW_BYTES
      ? new Uint8Array(body)
      : new Uint8Array(body.buffer, body.byteOffset, body.length);
    if (chunk.length > 0) this.#queue.push(chunk);
  }

  /** Stops the heartbeat and the subscription; a waiting writer fails with `error`. */
  #stop(error: Error): void {
    this.#link?.stopHeartbeat();
    this.#sendCredit.fail(error);
    if (!this.#subscription.isClosed()) {
      try {
        this.#subscription.unsubscribe();
      } catch {
        // The NATS connection is closed already.
      }
    }
    this.#onStop?.(this);
  }
}

/**
 * A Reset's reason: the error's message, or for lost messages a JSON object the peer turns
 * back into a NatsMessagesLostError, so both ends fail with the same type.
 */
function resetReason(error: Error): string {
  if (!(error instanceof NatsMessagesLostError)) return error.message;
  const { name, message, expected, received } = error;
  return JSON.stringify({ name, message, expected, received });
}

/** The NatsMessagesLostError a peer's Reset reports, if it reports one. */
function lostByPeer(label: string, reason: string): NatsMessagesLostError | undefined {
  if (!reason.startsWith("{")) return undefined;
  try {
    const { name, expected, received } = JSON.parse(reason);
    if (name !== "NatsMessagesLostError") return undefined;
    if (!Number.isSafeInteger(expected) || !Number.isSafeInteger(received)) return undefined;
    return new NatsMessagesLostError(`${label} (found by the peer)`, expected, received);
  } catch {
    return undefined;
  }
}
