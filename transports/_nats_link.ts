// The numbered messages between one NATS connection's end and its peer's inbox: what goes is
// numbered in order, what comes must follow its own numbers (NATS may drop a message, and a
// gap is lost data), and the heartbeat hears of both.

import type { NatsClient, NatsMessage } from "./_nats_client.ts";
import { TransportClosedError } from "../errors.ts";
import { decode, type Decoded, type Hello, type Kind, message } from "./_nats_wire.ts";
import { NatsMessagesLostError, NatsPeerGoneError } from "./_nats_errors.ts";
import { Heartbeat, type HeartbeatEvents } from "./_nats_flow.ts";

/** One end's link to the peer that sent `peer`, from its connect() on. */
export class NatsLink {
  /** What the peer said in the handshake. */
  readonly peer: Hello;
  readonly #nc: NatsClient;
  #sendSeq = 0;
  #recvSeq = 0;
  #heartbeat: Heartbeat | undefined;

  constructor(nc: NatsClient, peer: Hello) {
    this.#nc = nc;
    this.peer = peer;
  }

  /** A message of `kind`, numbered next, with room for a body of `bodyBytes` after its header. */
  message(kind: Kind, bodyBytes = 0): Uint8Array {
    return message(kind, this.nextSeq(), bodyBytes);
  }

  /** The next number, for a message built elsewhere (a Credit message). */
  nextSeq(): number {
    const seq = this.#sendSeq;
    this.#sendSeq = (seq + 1) >>> 0;
    return seq;
  }

  /** Publishes `payload` to the peer's inbox; throws what the client throws. */
  publish(payload: Uint8Array, reply?: string): void {
    this.#nc.publish(this.peer.inbox, payload, reply === undefined ? undefined : { reply });
    this.#heartbeat?.sent();
  }

  /**
   * Decodes `msg`, which must be the next the peer numbered.
   * @throws {NatsPeerGoneError} The server says the peer's inbox has no subscriber.
   * @throws {NatsMessagesLostError} A number was skipped.
   * @throws {TransportClosedError} Not a conduit message.
   */
  receive(msg: NatsMessage, label: string): Decoded {
    if (msg.headers?.code === 503) {
      // Our Ping found no subscriber on the peer's inbox: its NATS connection is gone.
      throw new NatsPeerGoneError(`${label}: the peer's inbox has no subscriber any more`);
    }
    const decoded = decode(msg.data);
    if (decoded === null) {
      throw new TransportClosedError(
        `${label}: a message of ${msg.data.length} bytes is not conduit's`,
      );
    }
    if (decoded.seq !== this.#recvSeq) {
      throw new NatsMessagesLostError(label, this.#recvSeq, decoded.seq);
    }
    this.#recvSeq = (this.#recvSeq + 1) >>> 0;
    this.#heartbeat?.heard();
    return decoded;
  }

  /** Starts the heartbeat: a tick every `intervalMs`, the peer gone after `silentMs`. */
  startHeartbeat(intervalMs: number, silentMs: number, events: HeartbeatEvents): void {
    this.#heartbeat = new Heartbeat(intervalMs, silentMs, events);
  }

  stopHeartbeat(): void {
    this.#heartbeat?.stop();
  }
}
