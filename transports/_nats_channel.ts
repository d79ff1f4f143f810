// One conduit connection over NATS as a ByteChannel: its own sequence numbers, a credit
// window per direction and a heartbeat, over two inbox subjects (one per end). The message
// format and the rules are described in transports/nats.ts's module doc.

import type { NatsClient, NatsMessage, NatsSubscription } from "./_nats_client.ts";
import { createInbox } from "@nats-io/transport-node";
import { TransportClosedError } from "../errors.ts";
import type { ByteChannel } from "./_byte_channel_transport.ts";
import {
  creditMessage,
  decode,
  HEADER_BYTES,
  type Hello,
  Kind,
  message,
  PROTOCOL,
  readCredit,
} from "./_nats_wire.ts";
import { NatsMessagesLostError, NatsPeerGoneError } from "./_nats_errors.ts";
import { ChunkQueue, flushWithin, Heartbeat } from "./_nats_flow.ts";
import { ReceiveCredit, SendCredit } from "./_credit_window.ts";

/** The settings one end keeps; the peer learns them in the handshake. */
export interface NatsChannelSettings {
  windowBytes: number;
  heartbeat: number;
  inboxPrefix: string;
}

/** Bodies below this size are copied out of the client's read buffer: a small chunk must not pin it. */
const COPY_BELOW_BYTES = 4096;
/** The peer is gone once nothing came from it for this many of its heartbeat intervals. */
const MISSED_HEARTBEATS = 3;

/** A connection's end: reads its inbox, publishes to the peer's. */
export class NatsChannel implements ByteChannel {
  label: string;
  /** The subject this end reads. */
  readonly inbox: string;
  readonly #nc: NatsClient;
  readonly #settings: NatsChannelSettings;
  readonly #subscription: NatsSubscription;
  #peer: Hello | undefined;
  #sendSeq = 0;
  #recvSeq = 0;
  #sendCredit = new SendCredit(0);
  readonly #receiveCredit: ReceiveCredit;
  readonly #queue = new ChunkQueue((chunk) => this.#take(chunk));
  /** Messages that came before `connect()`: the client's first ones can pass its reply. */
  #early: NatsMessage[] | undefined = [];
  /** The peer sent Bye: it reads nothing any more. */
  #peerClosed = false;
  #failure: Error | undefined;
  #released = false;
  #heartbeat: Heartbeat | undefined;
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
   */
  connect(peer: Hello, label: string, onOpen?: () => void): void {
    this.#peer = peer;
    this.#sendCredit = new SendCredit(peer.window);
    this.label = label;
    this.#onOpen = onOpen;
    if (onOpen !== undefined) return;
    this.#send(message(Kind.Open, this.#nextSeq(), 0));
    this.#startHeartbeat();
    const early = this.#early!;
    this.#early = undefined;
    for (const msg of early) this.#onMessage(null, msg);
  }

  /** Releases the subscription without a word to the peer (a connection never opened). */
  abandon(): void {
    if (this.#released) return;
    this.#released = true;
    this.#stop(new TransportClosedError(`${this.label} was never opened`));
  }

  read(): Promise<Uint8Array | null> {
    return this.#queue.read();
  }

  write(chunk: Uint8Array): Promise<void> | undefined {
    this.#assertWritable();
    if (chunk.length === 0) return undefined;
    const piece = this.#maxPiece();
    if (chunk.length <= piece && chunk.length <= this.#sendCredit.available) {
      this.#sendData(chunk);
      return undefined;
    }
    return this.#writeInPieces(chunk, piece);
  }

  closeWrite(): Promise<void> {
    if (this.#failure === undefined && !this.#released && !this.#peerClosed) {
      this.#send(message(Kind.End, this.#nextSeq(), 0));
    }
    return Promise.resolve();
  }

  async close(abortive: boolean): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    const notify = this.#failure === undefined && !this.#peerClosed && this.#peer !== undefined;
    if (notify) {
      try {
        this.#send(message(abortive ? Kind.Reset : Kind.Bye, this.#nextSeq(), 0));
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
    if (this.#failure !== undefined || this.#released) return;
    this.#failure = error;
    if (!this.#peerClosed && this.#peer !== undefined && !this.#nc.isClosed()) {
      try {
        const reason = new TextEncoder().encode(error.message);
        const reset = message(Kind.Reset, this.#nextSeq(), reason.length);
        reset.set(reason, HEADER_BYTES);
        this.#send(reset);
      } catch {
        // The peer learns it from its heartbeat.
      }
    }
    this.#stop(error);
    this.#queue.fail(error);
  }

  async #writeInPieces(chunk: Uint8Array, piece: number): Promise<void> {
    for (let offset = 0; offset < chunk.length;) {
      await this.#sendCredit.wait();
      this.#assertWritable();
      const size = Math.min(chunk.length - offset, piece, this.#sendCredit.available);
      this.#sendData(chunk.subarray(offset, offset + size));
      offset += size;
    }
  }

  #assertWritable(): void {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#released) throw new TransportClosedError(`${this.label} is closed`);
    if (this.#peerClosed) {
      throw new TransportClosedError(`${this.label}: the peer closed the connection`);
    }
  }

  /** The largest Data body the server takes now (a reconnect may change its limit). */
  #maxPiece(): number {
    const maxPayload = this.#nc.info?.max_payload ?? 1024 * 1024;
    return Math.min(maxPayload - HEADER_BYTES, this.#peer!.window);
  }

  #sendData(bytes: Uint8Array): void {
    // A copy: NATS keeps the payload queued after publish() returns, and the writer may
    // reuse its buffer once the write settled.
    const data = message(Kind.Data, this.#nextSeq(), bytes.length);
    data.set(bytes, HEADER_BYTES);
    this.#send(data);
    this.#sendCredit.spend(bytes.length);
  }

  #send(payload: Uint8Array, reply?: string): void {
    try {
      this.#nc.publish(this.#peer!.inbox, payload, reply === undefined ? undefined : { reply });
    } catch (cause) {
      const error = new TransportClosedError(
        `Publish to ${this.label} failed: ${cause instanceof Error ? cause.message : cause}`,
        { cause },
      );
      this.fail(error);
      throw error;
    }
    this.#heartbeat?.sent();
  }

  #nextSeq(): number {
    const seq = this.#sendSeq;
    this.#sendSeq = (seq + 1) >>> 0;
    return seq;
  }

  /** A read took `chunk`: grant the peer more once enough was read. */
  #take(chunk: Uint8Array): void {
    const grant = this.#receiveCredit.consume(chunk.length);
    if (grant !== undefined && this.#canNotify()) {
      try {
        this.#send(creditMessage(this.#nextSeq(), grant));
      } catch {
        // fail() has run: the next read reports it.
      }
    }
  }

  #canNotify(): boolean {
    return this.#failure === undefined && !this.#released && !this.#peerClosed;
  }

  #startHeartbeat(): void {
    this.#heartbeat = new Heartbeat(
      this.#settings.heartbeat,
      MISSED_HEARTBEATS * this.#peer!.heartbeat,
      this.#heartbeatEvents,
    );
  }

  readonly #onMessage = (error: Error | null, msg: NatsMessage): void => {
    if (this.#released || this.#failure !== undefined) return;
    if (this.#peer === undefined && error === null) {
      // The peer keeps to the window this end announced, so these are bounded by it.
      this.#early!.push(msg);
      return;
    }
    if (error !== null) {
      this.fail(
        new TransportClosedError(`${this.label}: the subscription failed: ${error.message}`, {
          cause: error,
        }),
      );
      return;
    }
    try {
      this.#receive(msg);
    } catch (cause) {
      this.fail(
        cause instanceof TransportClosedError
          ? cause
          : new TransportClosedError(`${this.label}: ${String(cause)}`, { cause }),
      );
    }
  };

  #receive(msg: NatsMessage): void {
    if (msg.headers?.code === 503) {
      // Our Ping found no subscriber on the peer's inbox: its NATS connection is gone.
      throw new NatsPeerGoneError(`${this.label}: the peer's inbox has no subscriber any more`);
    }
    const decoded = decode(msg.data);
    if (decoded === null) {
      throw new TransportClosedError(
        `${this.label}: a message of ${msg.data.length} bytes is not conduit's`,
      );
    }
    if (decoded.seq !== this.#recvSeq) {
      throw new NatsMessagesLostError(this.label, this.#recvSeq, decoded.seq);
    }
    this.#recvSeq = (this.#recvSeq + 1) >>> 0;
    this.#heartbeat?.heard();
    const { kind, body } = decoded;
    if (this.#onOpen !== undefined || kind === Kind.Open) return this.#receiveOpen(kind);
    if (kind === Kind.Data) return this.#receiveData(body);
    if (kind === Kind.Credit) {
      this.#sendCredit.grant(readCredit(body));
    } else if (kind === Kind.End || kind === Kind.Bye) {
      this.#queue.end();
      if (kind === Kind.Bye) {
        this.#peerClosed = true;
        this.#stop(new TransportClosedError(`${this.label}: the peer closed the connection`));
      }
    } else if (kind === Kind.Reset) {
      const reason = new TextDecoder().decode(body);
      this.#peerClosed = true;
      throw new TransportClosedError(
        `${this.label}: the peer aborted the connection${reason === "" ? "" : `: ${reason}`}`,
      );
    } else if (kind !== Kind.Ping) {
      throw new TransportClosedError(`${this.label}: unknown message kind ${kind}`);
    }
  }

  /** The listener's end waits for Open first; it comes once, and only from the client. */
  #receiveOpen(kind: number): void {
    const onOpen = this.#onOpen;
    if (kind !== Kind.Open || onOpen === undefined) {
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

  readonly #heartbeatEvents = {
    ping: (): void => {
      try {
        // With our inbox as reply subject: the server answers 503 if the peer's is gone.
        this.#send(message(Kind.Ping, this.#nextSeq(), 0), this.inbox);
      } catch {
        // fail() has run.
      }
    },
    gone: (silentMs: number): void => {
      this.fail(
        new NatsPeerGoneError(`${this.label}: nothing heard from the peer for ${silentMs} ms`),
      );
    },
  };

  /** Stops the heartbeat and the subscription; a waiting writer fails with `error`. */
  #stop(error: Error): void {
    this.#heartbeat?.stop();
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
