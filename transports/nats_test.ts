import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { TransportClosedError } from "../errors.ts";
import { stuckPeerOf, testTransportConformance } from "./_conformance.ts";
import { concat, pattern } from "../framing/_test_util.ts";
import { streamByte } from "./_test_nats_peer.ts";
import {
  haveNatsServer,
  type NatsServer,
  natsServerTest,
  startNatsServer,
} from "./_test_nats_server.ts";
import {
  connectNats,
  listenNats,
  type NatsListener,
  NatsMessagesLostError,
  NatsPeerGoneError,
} from "./nats.ts";
import type { Transport } from "./types.ts";

const natsTest = (name: string, fn: (server: NatsServer) => Promise<void>, config?: string) =>
  natsServerTest(`nats: ${name}`, fn, config);

const PEER = new URL("./_test_nats_peer.ts", import.meta.url).pathname;
const CONFIG = new URL("../deno.json", import.meta.url).pathname;

if (haveNatsServer) {
  testTransportConformance({
    name: "nats",
    pair: async () => {
      const server = await startNatsServer();
      const [serverNc, clientNc] = await Promise.all([server.connect(), server.connect()]);
      const listener = await listenNats(serverNc, "conformance", { queue: "q" });
      const accepted = listener.accept();
      const a = await connectNats(clientNc, "conformance");
      const b = await accepted;
      return {
        a,
        b,
        cleanup: async () => {
          await listener.close();
          await server.stop();
        },
      };
    },
    stuckPeer: async () => {
      const server = await startNatsServer();
      const nc = await server.connect();
      const listener = await listenNats(nc, "stuck", { heartbeat: 100 });
      const peer = spawnPeer(server, "stuck", "idle");
      const transport = await listener.accept();
      return stuckPeerOf(transport, peer, async () => {
        await peer.stdout.cancel().catch(() => {});
        await listener.close();
        await server.stop();
      });
    },
    abortSeenByPeer: "error",
  });
} else {
  Deno.test({
    name: "nats: transport conformance (nats-server is not installed)",
    ignore: true,
    fn() {},
  });
}

natsTest("no listener on the subject is ConnectionRefused", async (server) => {
  const nc = await server.connect();
  await assert.rejects(connectNats(nc, "nobody.here"), Deno.errors.ConnectionRefused);
});

natsTest(
  "listeners in one queue group share the connections, each pinned to one",
  async (server) => {
    const ncs = await Promise.all([server.connect(), server.connect(), server.connect()]);
    const [first, second] = await Promise.all([
      listenNats(ncs[0], "svc", { queue: "g" }),
      listenNats(ncs[1], "svc", { queue: "g" }),
    ]);
    const served = [0, 0];
    const serve = async (listener: NatsListener, index: number) => {
      for await (const t of listener) {
        served[index]++;
        // Echo, tagging each reply with the instance that serves it.
        void (async () => {
          const writer = t.writable.getWriter();
          for await (const chunk of t.readable) {
            await writer.write(
              new Uint8Array([index, ...chunk]),
            );
          }
          await writer.close();
          await t.close();
        })();
      }
    };
    const serving = [serve(first, 0), serve(second, 1)];
    const clients = await Promise.all(Array.from({ length: 40 }, () => connectNats(ncs[2], "svc")));
    for (const client of clients) {
      const writer = client.writable.getWriter();
      const reader = client.readable.getReader();
      let instance = -1;
      for (let i = 0; i < 5; i++) {
        await writer.write(new Uint8Array([i]));
        const { value } = await reader.read();
        assert.equal(value![1], i);
        if (instance === -1) instance = value![0];
        assert.equal(value![0], instance, "a connection stays with the instance that accepted it");
      }
      await writer.close();
      assert.equal((await reader.read()).done, true);
      await client.close();
    }
    assert.equal(served[0] + served[1], 40);
    assert.ok(served[0] > 0 && served[1] > 0, `both instances served: ${served}`);
    await Promise.all([first.close(), second.close()]);
    await Promise.all(serving);
  },
);

natsTest(
  "without a queue group every listener answers, one gets each connection",
  async (server) => {
    const ncs = await Promise.all([server.connect(), server.connect(), server.connect()]);
    const listeners = await Promise.all([
      listenNats(ncs[0], "all", { heartbeat: 50 }),
      listenNats(ncs[1], "all", { heartbeat: 50 }),
    ]);
    const accepted: Transport[] = [];
    const serving = listeners.map(async (listener) => {
      for await (const t of listener) {
        accepted.push(t);
        void t.readable.pipeTo(t.writable).catch(() => {});
      }
    });
    const clients = await Promise.all(
      Array.from({ length: 10 }, () => connectNats(ncs[2], "all", { heartbeat: 50 })),
    );
    // Each client talks to the one listener whose reply it took; the other listener's
    // half-made connection stays silent, so no stray message reaches the client (that would be
    // a sequence error), also across several heartbeat intervals.
    for (let round = 0; round < 3; round++) {
      for (const [i, client] of clients.entries()) {
        const writer = client.writable.getWriter();
        const reader = client.readable.getReader();
        await writer.write(new Uint8Array([i, round]));
        assert.deepEqual((await reader.read()).value, new Uint8Array([i, round]));
        writer.releaseLock();
        reader.releaseLock();
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(accepted.length, 10);
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(listeners.map((l) => l.close()));
    await Promise.all(serving);
    await Promise.all(accepted.map((t) => t.close()));
  },
);

natsTest("frames cross in pieces of the server's max_payload", async (server) => {
  const [serverNc, clientNc] = await Promise.all([server.connect(), server.connect()]);
  assert.equal(clientNc.info?.max_payload, 4096);
  const listener = await listenNats(serverNc, "small");
  const accepted = listener.accept();
  const client = await connectNats(clientNc, "small");
  const peer = await accepted;
  const sent = new Uint8Array(1 << 20).map((_, i) => i * 7);
  const writer = client.writable.getWriter();
  const writing = writer.write(sent).then(() => writer.close());
  const chunks = await Array.fromAsync(peer.readable);
  await writing;
  assert.ok(chunks.every((c) => c.length <= 4096 - 5), "no piece is larger than max_payload");
  assert.deepEqual(concat(chunks), sent);
  await Promise.all([client.close(), peer.close(), listener.close()]);
}, "max_payload: 4096");

natsTest(
  "a slow reader slows the writer: nothing lost, at most the window ahead",
  async (server) => {
    const [serverNc, clientNc] = await Promise.all([server.connect(), server.connect()]);
    const window = 64 * 1024;
    const listener = await listenNats(serverNc, "slow", { windowBytes: window });
    const accepted = listener.accept();
    const client = await connectNats(clientNc, "slow");
    const peer = await accepted;
    const total = 4 << 20;
    let written = 0;
    let read = 0;
    let maxAhead = 0;
    const writing = (async () => {
      const writer = client.writable.getWriter();
      for (let off = 0; off < total; off += 16 * 1024) {
        await writer.write(pattern(off, 16 * 1024));
        written += 16 * 1024;
        maxAhead = Math.max(maxAhead, written - read);
      }
      await writer.close();
    })();
    const received: Uint8Array[] = [];
    for await (const chunk of peer.readable) {
      received.push(chunk);
      read += chunk.length;
      if (received.length % 8 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await writing;
    const all = concat(received);
    assert.equal(all.length, total);
    for (let off = 0; off < total; off += 16 * 1024) {
      assert.deepEqual(
        all.subarray(off, off + 16 * 1024),
        pattern(off, 16 * 1024),
        `bytes at ${off}`,
      );
    }
    // The writer's queue (64 KiB high-water mark) plus the window, plus the write in progress.
    assert.ok(maxAhead <= window + 64 * 1024 + 16 * 1024, `the writer ran ${maxAhead} bytes ahead`);
    await Promise.all([client.close(), peer.close(), listener.close()]);
  },
  'max_payload: 8192\nmax_pending: 262144\nwrite_deadline: "500ms"',
);

natsTest(
  "messages the server dropped are a typed error, never a stream with a hole",
  async (server) => {
    const nc = await server.connect();
    // The peer's window (64 MiB) is far larger than what the server keeps for a slow client
    // (max_pending): while the peer's event loop is blocked, the server drops it as a slow
    // consumer, the peer's client reconnects, and the messages in between are lost.
    const listener = await listenNats(nc, "drop");
    const child = spawnPeer(server, "drop", "block", "1500");
    const transport = await listener.accept();
    const writer = transport.writable.getWriter();
    const total = 32 << 20;
    const writing = (async () => {
      try {
        for (let offset = 0; offset < total; offset += BLOCK) {
          await writer.write(
            streamBlock(offset),
          );
        }
        await writer.close();
        return undefined;
      } catch (error) {
        return error;
      }
    })();
    const output = await readOutput(child);
    const bytes = Number(output.match(/bytes (\d+)/)?.[1]);
    // The peer got a prefix of the stream, every byte checked, then the loss as a typed error.
    assert.match(
      output,
      /^connected\nbytes \d+\nerror TransportClosedError: NatsMessagesLostError\n$/,
      output,
    );
    assert.ok(bytes < total, `the peer read ${bytes} bytes`);
    // This end learns of it too (the peer's Reset): its reads fail, its writes stop.
    await assert.rejects(transport.readable.getReader().read(), TransportClosedError);
    await writing;
    await transport.close();
    await listener.close();
  },
  'max_payload: 65536\nmax_pending: 262144\nwrite_deadline: "100ms"',
);

natsTest(
  "a forged message out of sequence closes the connection with NatsMessagesLostError",
  async (server) => {
    const [serverNc, clientNc, intruder] = await Promise.all([
      server.connect(),
      server.connect(),
      server.connect(),
    ]);
    const listener = await listenNats(serverNc, "gap");
    // The intruder overhears the client's handshake, which names the client's inbox.
    const overheard = Promise.withResolvers<string>();
    const spy = intruder.subscribe("gap", {
      callback: (_e, m) => overheard.resolve(JSON.parse(m.string()).inbox),
    });
    await intruder.flush();
    const accepted = listener.accept();
    const client = await connectNats(clientNc, "gap");
    const peer = await accepted;
    const inbox = await overheard.promise;
    spy.unsubscribe();
    // The client's inbox gets a Data message numbered 5 while 0 is due.
    intruder.publish(inbox, new Uint8Array([0, 0, 0, 0, 5, 42]));
    const error = await Array.fromAsync(client.readable).catch((e) => e);
    assert.ok(error instanceof TransportClosedError, `got ${error}`);
    assert.ok(error.cause instanceof NatsMessagesLostError, `cause ${error.cause}`);
    assert.equal(error.cause.expected, 0);
    assert.equal(error.cause.received, 5);
    // The peer learns of it (a Reset) and its reads fail with the same type (issue 29).
    const peerError = await Array.fromAsync(peer.readable).catch((e) => e);
    assert.ok(peerError instanceof TransportClosedError, `got ${peerError}`);
    const peerCause = peerError.cause ?? peerError;
    assert.ok(peerCause instanceof NatsMessagesLostError, `the peer's error: ${peerError}`);
    assert.equal(peerCause.expected, 0);
    assert.equal(peerCause.received, 5);
    assert.match(peerCause.message, /found by the peer/);
    await Promise.all([client.close(), peer.close(), listener.close()]);
  },
);

natsTest("inboxPrefix names the subjects each end reads", async (server) => {
  const [serverNc, clientNc, observer] = await Promise.all([
    server.connect(),
    server.connect(),
    server.connect(),
  ]);
  const subjects: string[] = [];
  // Every message of the connection, both ways, as the server routes it.
  const watch = observer.subscribe("_CONDUIT.>", {
    callback: (_e, m) => void subjects.push(m.subject),
  });
  await observer.flush();
  const listener = await listenNats(serverNc, "prefixed", { inboxPrefix: "_CONDUIT.srv" });
  const accepted = listener.accept();
  const client = await connectNats(clientNc, "prefixed", { inboxPrefix: "_CONDUIT.cli" });
  const peer = await accepted;
  const writer = client.writable.getWriter();
  await writer.write(new Uint8Array([1, 2]));
  await writer.close();
  assert.deepEqual(await Array.fromAsync(peer.readable), [new Uint8Array([1, 2])]);
  await Promise.all([client.close(), peer.close(), listener.close()]);
  await observer.flush();
  watch.unsubscribe();
  assert.ok(subjects.some((subject) => subject.startsWith("_CONDUIT.srv.")), `${subjects}`);
  assert.ok(subjects.some((subject) => subject.startsWith("_CONDUIT.cli.")), `${subjects}`);
});

natsTest(
  "a peer whose NATS connection closes ends pending reads and writes in bounded time",
  async (server) => {
    const [serverNc, clientNc] = await Promise.all([server.connect(), server.connect()]);
    const listener = await listenNats(serverNc, "gone", { heartbeat: 100, windowBytes: 65536 });
    const accepted = listener.accept();
    const client = await connectNats(clientNc, "gone", { heartbeat: 100 });
    const peer = await accepted;
    const reader = peer.readable.getReader();
    const reading = reader.read().catch((e) => e);
    const writer = peer.writable.getWriter();
    // More than the client's window: the write waits for credit that will never come.
    const writing = writer.write(new Uint8Array(8 << 20)).catch((e) => e);
    await clientNc.close();
    const [readError, writeError] = await Promise.all([reading, writing]);
    assert.ok(readError instanceof TransportClosedError, `read: ${readError}`);
    assert.ok(readError.cause instanceof NatsPeerGoneError, `read cause: ${readError.cause}`);
    assert.ok(writeError instanceof NatsPeerGoneError, `write: ${writeError}`);
    // The client's own transport ended when its NATS connection closed.
    await assert.rejects(client.readable.getReader().read(), TransportClosedError);
    await Promise.all([client.close(), peer.close(), listener.close()]);
  },
);

natsTest("a nats-server that dies ends both ends with NatsPeerGoneError", async (server) => {
  const [serverNc, clientNc] = await Promise.all([server.connect(), server.connect()]);
  const listener = await listenNats(serverNc, "dies", { heartbeat: 100 });
  const accepted = listener.accept();
  const client = await connectNats(clientNc, "dies", { heartbeat: 100 });
  const peer = await accepted;
  const reading = [client, peer].map((t) => t.readable.getReader().read().catch((e) => e));
  Deno.kill(server.pid, "SIGKILL");
  // The clients try to reconnect (their NATS connections stay open); the heartbeat notices.
  for (const error of await Promise.all(reading)) {
    assert.ok(error instanceof TransportClosedError, `got ${error}`);
    assert.ok(error.cause instanceof NatsPeerGoneError, `cause ${error.cause}`);
  }
  await Promise.all([client.close(), peer.close(), listener.close()]);
});

natsTest("closing the listener ends iteration and refuses new connections", async (server) => {
  const nc = await server.connect();
  const listener = await listenNats(nc, "closing");
  const iterating = Array.fromAsync(listener);
  await listener.close();
  assert.deepEqual(await iterating, []);
  await assert.rejects(listener.accept(), TransportClosedError);
  await assert.rejects(connectNats(nc, "closing"), Deno.errors.ConnectionRefused);
});

function spawnPeer(server: NatsServer, subject: string, mode: string, arg = ""): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", CONFIG, PEER, server.url, subject, mode, arg],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
}

async function readOutput(child: Deno.ChildProcess): Promise<string> {
  const text = await new Response(child.stdout).text();
  await child.status;
  return text;
}

const BLOCK = 64 * 1024;

function streamBlock(offset: number): Uint8Array {
  const bytes = new Uint8Array(BLOCK);
  for (let i = 0; i < BLOCK; i++) bytes[i] = streamByte(offset + i);
  return bytes;
}

natsTest(
  "a full backlog and a malformed handshake are refused, bad options are RangeErrors",
  async (server) => {
    const nc = await server.connect();
    const listener = await listenNats(nc, "full", { backlog: 1 });
    const first = await connectNats(nc, "full");
    await assert.rejects(connectNats(nc, "full"), {
      name: "ConnectionRefused",
      message: /backlog of 1/,
    });
    const reply = await nc.request("full", new TextEncoder().encode("hello?"), { timeout: 5000 });
    assert.match(reply.string(), /"error":"The NATS handshake message is not JSON"/);
    await assert.rejects(listenNats(nc, "x", { windowBytes: 0 }), {
      name: "RangeError",
      message: /windowBytes must be/,
    });
    await assert.rejects(connectNats(nc, "full", { heartbeat: NaN }), {
      name: "RangeError",
      message: /heartbeat/,
    });
    const accepted = await listener.accept();
    await Promise.all([first.close(), accepted.close(), listener.close()]);
  },
);

natsTest(
  "hellos that never open give way to a client that does (the backlog is not held)",
  async (server) => {
    const [serverNc, floodNc, clientNc] = await Promise.all([
      server.connect(),
      server.connect(),
      server.connect(),
    ]);
    const listener = await listenNats(serverNc, "held", { backlog: 4 });
    // A peer allowed to publish on the subject: valid hellos, never an Open.
    const hello = new TextEncoder().encode(JSON.stringify({
      protocol: "conduit-nats/1",
      inbox: "_INBOX.nowhere",
      window: 1 << 20,
      heartbeat: 1000,
    }));
    for (let i = 0; i < 8; i++) await floodNc.request("held", hello, { timeout: 5000 });
    const client = await connectNats(clientNc, "held");
    const accepted = await listener.accept();
    await client.writable.getWriter().write(new Uint8Array([7]));
    const { value } = await accepted.readable.getReader().read();
    assert.deepEqual([...value!], [7]);
    await Promise.all([client.close(), accepted.close(), listener.close()]);
  },
);

natsTest(
  "a discoverable listener answers probes, announces itself and takes direct connections",
  async (server) => {
    const [serverNc, clientNc] = await Promise.all([server.connect(), server.connect()]);
    const heard: string[] = [];
    const announcements = clientNc.subscribe("disc.announce", {
      callback: (_, msg) => void heard.push(new TextDecoder().decode(msg.data)),
    });
    await clientNc.flush();
    const listener = await listenNats(serverNc, "disc", { queue: "q", instance: "one" });
    assert.equal(listener.instance, "one");
    const probe = await clientNc.request("disc.discover", new Uint8Array(0), { timeout: 1000 });
    assert.deepEqual(JSON.parse(new TextDecoder().decode(probe.data)), {
      protocol: "conduit-nats/1",
      instance: "one",
      subject: "disc.instance.one",
    });
    const accepted = listener.accept();
    const client = await connectNats(clientNc, "disc.instance.one");
    const peer = await accepted;
    await client.writable.getWriter().write(new Uint8Array([1]));
    assert.deepEqual((await peer.readable.getReader().read()).value, new Uint8Array([1]));
    await Promise.all([client.close(), peer.close(), listener.close()]);
    await clientNc.flush();
    await serverNc.flush();
    await clientNc.flush();
    announcements.unsubscribe();
    assert.deepEqual(heard.map((h) => JSON.parse(h).event), ["up", "down"]);
    await assert.rejects(connectNats(clientNc, "disc.instance.one"), Deno.errors.ConnectionRefused);
    await assert.rejects(listenNats(serverNc, "disc", { instance: "a.b" }), {
      name: "TypeError",
      message: 'instance must be 1 to 64 letters, digits, "-" or "_", got "a.b"',
    });
    const hidden = await listenNats(serverNc, "hidden", { discoverable: false });
    await assert.rejects(
      clientNc.request("hidden.discover", new Uint8Array(0), { timeout: 1000 }),
      (error: Error) => error.name === "RequestError" && /no responders/i.test(error.message),
    );
    await hidden.close();
  },
);

natsTest(
  "credentials ride on the caller's NATS connection (a token-protected server)",
  async (server) => {
    const withToken = () => connect({ servers: server.url, token: "s3cret" });
    // (A connection without the token is refused by the server; nats.js then reports the reset
    // socket as an uncaught error, so this test does not try one.)
    const [serverNc, clientNc] = await Promise.all([withToken(), withToken()]);
    try {
      const listener = await listenNats(serverNc, "auth", { queue: "auth" });
      const accepted = listener.accept();
      const client = await connectNats(clientNc, "auth");
      const peer = await accepted;
      await client.writable.getWriter().write(new Uint8Array([9]));
      assert.deepEqual((await peer.readable.getReader().read()).value, new Uint8Array([9]));
      await Promise.all([client.close(), peer.close(), listener.close()]);
    } finally {
      await Promise.all([serverNc.close(), clientNc.close()]);
    }
  },
  'authorization { token: "s3cret" }',
);
