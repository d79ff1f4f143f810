// Hostile peers of the NATS transport: a hand-made listener on the same server (no secret)
// that speaks conduit-nats/1 itself and sends what an honest one never would.

import assert from "node:assert/strict";
import { createInbox, type NatsConnection } from "@nats-io/transport-node";
import { TransportClosedError } from "../errors.ts";
import { type NatsServer, natsServerTest } from "./_test_nats_server.ts";
import { connectNats, listenNats } from "./nats.ts";
import {
  creditMessage,
  decode,
  type Decoded,
  encodeHello,
  HEADER_BYTES,
  Kind,
  message,
  PROTOCOL,
} from "./_nats_wire.ts";

const attack = (name: string, fn: (server: NatsServer) => Promise<void>, config?: string) =>
  natsServerTest(`nats attack: ${name}`, fn, config);

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A listener written by hand: what it answers a hello with, and what it sends after. */
interface RawListener {
  /** The client's inbox, once its hello came. */
  readonly clientInbox: Promise<string>;
  /** Resolves once the client's Open came. */
  readonly opened: Promise<void>;
  /** The messages that reached this listener's inbox, decoded. */
  readonly received: Decoded[];
  /** Publishes a message of `kind` with `body`, numbered next, to the client's inbox. */
  send(kind: Kind, body?: Uint8Array): Promise<void>;
  /** Publishes a whole payload (numbered by the caller) to the client's inbox. */
  sendRaw(payload: Uint8Array): Promise<void>;
  stop(): void;
}

/**
 * Listens on `subject` by hand: replies to one hello with `window` and `heartbeat`, after
 * `beforeReply(clientInbox)` ran (what a lying listener does before it answers).
 */
async function rawListener(
  nc: NatsConnection,
  subject: string,
  { window = 1 << 20, heartbeat = 60_000, beforeReply = async (_: string) => {} } = {},
): Promise<RawListener> {
  const inbox = createInbox();
  const received: Decoded[] = [];
  const opened = Promise.withResolvers<void>();
  const clientInbox = Promise.withResolvers<string>();
  let seq = 0;
  const own = nc.subscribe(inbox, {
    callback: (_error, msg) => {
      const decoded = decode(msg.data);
      if (decoded === null) return;
      received.push(decoded);
      if (decoded.kind === Kind.Open) opened.resolve();
    },
  });
  const hellos = nc.subscribe(subject, {
    max: 1,
    callback: (_error, msg) => {
      const client = JSON.parse(msg.string()).inbox as string;
      clientInbox.resolve(client);
      void beforeReply(client).then(() =>
        msg.respond(encodeHello({ protocol: PROTOCOL, inbox, window, heartbeat }))
      );
    },
  });
  await nc.flush();
  const sendRaw = async (payload: Uint8Array) => {
    nc.publish(await clientInbox.promise, payload);
    await nc.flush();
  };
  return {
    clientInbox: clientInbox.promise,
    opened: opened.promise,
    received,
    sendRaw,
    send: (kind, body = new Uint8Array(0)) => {
      const payload = message(kind, seq++, body.length);
      payload.set(body, HEADER_BYTES);
      return sendRaw(payload);
    },
    stop() {
      own.unsubscribe();
      hellos.unsubscribe();
    },
  };
}

/** The Data bytes `peer` received, in order. */
function dataOf(peer: RawListener): number[] {
  return peer.received.filter((m) => m.kind === Kind.Data).flatMap((m) => [...m.body]);
}

attack(
  "a Credit that is not a number fails the connection, never a write dropped as sent",
  async (server) => {
    const [peerNc, clientNc] = await Promise.all([server.connect(), server.connect()]);
    const peer = await rawListener(peerNc, "nan");
    const client = await connectNats(clientNc, "nan");
    await peer.opened;
    // Credit message 0 of the peer: a float64 NaN where a byte total belongs.
    peerNc.publish(await peer.clientInbox, creditMessage(0, NaN));
    await peerNc.flush();
    await delay(100);
    const writer = client.writable.getWriter();
    const wrote = await writer.write(new Uint8Array([1, 2, 3])).then(() => "ok", (e) => e);
    await clientNc.flush();
    await delay(100);
    if (wrote === "ok") {
      assert.deepEqual(
        dataOf(peer),
        [1, 2, 3],
        "the write resolved, so its bytes must have reached the peer",
      );
    }
    const read = await client.readable.getReader().read().catch((e) => e);
    assert.ok(read instanceof TransportClosedError, `the client's read: ${read}`);
    assert.match(String(read.message), /Credit/);
    peer.stop();
    await client.close();
  },
);

attack(
  "a window under one byte is refused, never a write that waits forever",
  async (server) => {
    const [peerNc, clientNc] = await Promise.all([server.connect(), server.connect()]);
    // The local option: a RangeError, as for 0.
    const listening = await listenNats(peerNc, "local", { windowBytes: 0.5 }).then(
      async (listener) => (await listener.close(), "listening"),
      (error) => error,
    );
    assert.ok(listening instanceof RangeError, `listenNats with windowBytes 0.5: ${listening}`);
    // A peer's handshake: malformed, as a window of 0 is.
    const peer = await rawListener(peerNc, "half", { window: 0.5 });
    const connected = await connectNats(clientNc, "half").then((t) => t, (e) => e);
    if (!(connected instanceof Error)) {
      const writer = connected.writable.getWriter();
      const outcome = await Promise.race([
        writer.write(new Uint8Array(64)).then(() => "written", (e: Error) => e.name),
        delay(1000).then(() => "still waiting after 1 s"),
      ]);
      peer.stop();
      await connected.abort(new Error("test over"));
      assert.fail(`connectNats took a window of 0.5 bytes; a 64-byte write: ${outcome}`);
    }
    assert.ok(connected instanceof TypeError, `connectNats: ${connected}`);
    assert.match(connected.message, /malformed/);
    peer.stop();
  },
);

attack(
  "messages flooded into a client's inbox before the listener's reply are bounded",
  async (server) => {
    const [peerNc, clientNc] = await Promise.all([server.connect(), server.connect()]);
    const window = 64 * 1024;
    let flooded = 0;
    let probed = "";
    // A lying listener: before it replies, it sends 16 times the client's window to its inbox.
    const peer = await rawListener(peerNc, "flood", {
      beforeReply: async (client) => {
        for (let seq = 0; seq < 64; seq++) {
          const data = message(Kind.Data, seq, 16 * 1024);
          peerNc.publish(client, data);
          flooded += 16 * 1024;
        }
        await peerNc.flush();
        // The client's inbox no longer takes messages once it saw more than its window (it may
        // take a moment to read what was sent: ask again until it is gone, for up to 2 s).
        for (let seq = 64; seq < 84 && probed !== "gone"; seq++) {
          probed = await peerNc.request(client, message(Kind.Ping, seq, 0), { timeout: 100 })
            .then(
              () => "answered",
              (error: Error) => /no responders/i.test(error.message) ? "gone" : error.message,
            );
        }
      },
    });
    const connected = await connectNats(clientNc, "flood", { windowBytes: window }).then(
      (t) => t,
      (e) => e,
    );
    peer.stop();
    if (!(connected instanceof Error)) await connected.abort(new Error("test over"));
    assert.equal(probed, "gone", `after ${flooded} bytes the client's inbox still takes more`);
    assert.ok(connected instanceof TransportClosedError, `connectNats: ${connected}`);
    assert.match(connected.message, /before the handshake/);
  },
);
