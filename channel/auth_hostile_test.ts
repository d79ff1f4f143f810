// serve() with `auth` against peers without the secret, or with a stale one, over real Unix and
// TCP sockets: what a hostile peer can make the server accept, hold or answer, and what the
// server keeps of the secret it was given.

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { jsonCodec } from "../codecs/json.ts";
import { encodeFrame } from "../framing/frame_decoder.ts";
import { AUTH_KIND } from "../protocol/format.ts";
import { toHex } from "../protocol/handshake.ts";
import { connectTcp, listenTcp } from "../transports/tcp.ts";
import type { Listener, Transport } from "../transports/types.ts";
import { connectUnix, listenUnix } from "../transports/unix.ts";
import { helloBody, RawPeer } from "./_test_raw_peer.ts";
import { openChannel } from "./channel.ts";
import { AuthenticationError, HandshakeError } from "./errors.ts";
import { serve } from "./serve.ts";

const codec = jsonCodec();
const utf8 = new TextEncoder();

interface Socket {
  readonly name: string;
  listen(): Promise<
    { listener: Listener; connect: () => Promise<Transport>; done(): Promise<void> }
  >;
}

const unixSocket: Socket = {
  name: "unix",
  async listen() {
    const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
    const listener = await listenUnix(`${dir}/s`);
    return {
      listener,
      connect: () => connectUnix(`${dir}/s`),
      done: () => Deno.remove(dir, { recursive: true }).catch(() => {}),
    };
  },
};

const tcpSocket: Socket = {
  name: "tcp",
  async listen() {
    const listener = await listenTcp({ port: 0 });
    const { port } = listener.addr as Deno.NetAddr;
    return { listener, connect: () => connectTcp({ port }), done: () => Promise.resolve() };
  },
};

/** A client's HELLO frame asking for authentication as the initiator, with a fresh nonce. */
function authHelloFrame(): Uint8Array {
  const nonce = toHex(crypto.getRandomValues(new Uint8Array(32)));
  const body = helloBody({ auth: { method: "hmac-sha256-v2", nonce, role: "initiator" } });
  return encodeFrame(new Uint8Array([0x01, ...body]));
}

for (const socket of [unixSocket, tcpSocket]) {
  for (
    const [kind, make] of [
      ["Uint8Array", (bytes: Uint8Array) => bytes.slice()],
      ["Buffer", (bytes: Uint8Array) => Buffer.from(bytes)],
    ] as const
  ) {
    Deno.test(`auth hostile (${socket.name}): serve() keeps its own copy of a ${kind} secret; zeroing the caller's afterwards lets no zero key in`, async () => {
      const { listener, connect, done } = await socket.listen();
      const original = crypto.getRandomValues(new Uint8Array(32));
      const secret = make(original);
      let calls = 0;
      const server = serve(listener, {
        codec,
        auth: { secret },
        handlers: { ping: () => (++calls, "pong") },
      });
      // Secret hygiene once it is handed over; reusing the buffer for the next key does the same.
      secret.fill(0);
      const zeros = await openChannel<{ ping(): string }>(await connect(), {
        codec,
        auth: { secret: new Uint8Array(32) },
      }).then(async (channel) => {
        await channel.remote.ping().catch(() => {});
        await channel.close();
        return channel;
      }, (error: unknown) => error);
      assert.ok(zeros instanceof AuthenticationError, `the zero key got in (${zeros})`);
      assert.equal(zeros.code, "auth_failed");
      const client = await openChannel<{ ping(): string }>(await connect(), {
        codec,
        auth: { secret: original },
      });
      assert.equal(await client.remote.ping(), "pong");
      assert.equal(calls, 1);
      await client.close();
      await server.close();
      await done();
    });
  }
}

Deno.test("auth hostile: serve() with auth: null throws a TypeError naming the option, not a null dereference", async () => {
  const listener = await listenTcp({ port: 0 });
  try {
    assert.throws(
      () => serve(listener, { codec, auth: null as unknown as false, handlers: {} }),
      (error: unknown) => {
        assert.ok(error instanceof TypeError, String(error));
        assert.match(error.message, /auth/);
        assert.doesNotMatch(error.message, /Cannot read properties/);
        return true;
      },
    );
  } finally {
    await listener.close();
  }
});

for (const socket of [unixSocket, tcpSocket]) {
  Deno.test(`auth hostile (${socket.name}): frames pipelined behind HELLO before a proof reach no handler; close() mid-handshake leaves nothing`, async () => {
    const { listener, connect, done } = await socket.listen();
    const secret = "a secret of the test, 32 bytes or more";
    const errors: unknown[] = [];
    let calls = 0;
    let made = 0;
    const server = serve(listener, {
      codec,
      auth: { secret },
      handshakeTimeout: 60_000,
      handlers: () => (++made, { hit: () => ++calls }),
      onError: (error) => errors.push(error),
    });
    const call = encodeFrame(new Uint8Array([0x10, 1, 0, 0, 3, ...utf8.encode("hit")]));
    const notify = encodeFrame(new Uint8Array([0x11, 3, ...utf8.encode("hit")]));
    const ping = encodeFrame(new Uint8Array([0x06, 1]));
    const guess = encodeFrame(new Uint8Array([AUTH_KIND, ...new Uint8Array(32)]));
    // Each is refused at its first frame after HELLO, whatever follows it.
    const scripts = [
      [authHelloFrame(), call, guess],
      [authHelloFrame(), notify],
      [authHelloFrame(), ping, call],
      [authHelloFrame(), guess, call],
    ];
    for (const script of scripts) {
      const peer = new RawPeer(await connect());
      await peer.sendBytes(new Uint8Array(script.flatMap((frame) => [...frame])));
      const goodbye = await peer.goodbye();
      assert.equal(goodbye.code, "auth_failed");
      assert.ok(!String(goodbye.reason).includes(secret));
      await peer.ended();
      await peer.close();
    }
    // Then some left in every stage of the handshake when the server closes.
    const stalled: RawPeer[] = [];
    for (let i = 0; i < 12; i++) {
      const peer = new RawPeer(await connect());
      const hello = authHelloFrame();
      if (i % 3 === 1) await peer.sendBytes(hello.subarray(0, 9));
      if (i % 3 === 2) await peer.sendBytes(new Uint8Array([...hello, 0, 0, 0, 33, AUTH_KIND]));
      stalled.push(peer);
    }
    while (server.connections < stalled.length) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await server.close();
    for (const peer of stalled) {
      await peer.ended();
      await peer.close();
    }
    assert.equal(calls, 0);
    assert.equal(made, 0);
    assert.equal(server.connections, 0);
    const refused = errors.filter((error) => error instanceof AuthenticationError);
    assert.equal(refused.length, scripts.length);
    assert.ok(errors.every((error) => error instanceof HandshakeError), String(errors));
    await done();
  });
}

Deno.test("auth hostile (tcp): a client trickling its HELLO a byte at a time is closed at handshakeTimeout", async () => {
  const { listener, connect, done } = await tcpSocket.listen();
  const errors: unknown[] = [];
  const server = serve(listener, {
    codec,
    auth: { secret: "a secret of the test, 32 bytes or more" },
    handshakeTimeout: 200,
    handlers: {},
    onError: (error) => errors.push(error),
  });
  const peer = new RawPeer(await connect());
  const hello = authHelloFrame();
  const started = performance.now();
  let sent = 0;
  const trickle = setInterval(() => {
    if (sent < hello.length) void peer.sendBytes(hello.subarray(sent, ++sent));
  }, 20);
  const goodbye = await peer.goodbye();
  const elapsed = performance.now() - started;
  clearInterval(trickle);
  assert.equal(goodbye.code, "handshake_timeout");
  assert.ok(elapsed < 1000, `held for ${Math.round(elapsed)} ms`);
  assert.ok(sent < hello.length, "the trickle finished its HELLO first");
  await peer.ended();
  await peer.close();
  while (server.connections > 0) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.ok(errors[0] instanceof HandshakeError, String(errors[0]));
  assert.equal(errors[0].code, "handshake_timeout");
  await server.close();
  await done();
});

Deno.test("auth hostile (tcp): a listener whose accept fails is retried and reported; a client still authenticates; close() mid-retry leaves no timer", async () => {
  const { listener, connect, done } = await tcpSocket.listen();
  let failures = 3;
  const flaky: Listener = {
    addr: listener.addr,
    encryption: listener.encryption,
    accept: () => failures-- > 0 ? Promise.reject(new Error("accept failed")) : listener.accept(),
    close: () => listener.close(),
    [Symbol.asyncIterator]: () => listener[Symbol.asyncIterator](),
    [Symbol.asyncDispose]: () => listener.close(),
  };
  const errors: unknown[] = [];
  const secret = "a secret of the test, 32 bytes or more";
  const server = serve(flaky, {
    codec,
    auth: { secret },
    handlers: { ping: () => "pong" },
    onError: (error) => errors.push(error),
  });
  const client = await openChannel<{ ping(): string }>(await connect(), {
    codec,
    auth: { secret },
  });
  assert.equal(await client.remote.ping(), "pong");
  assert.equal(errors.length, 3);
  assert.ok(errors.every((error) => (error as Error).message === "accept failed"));
  await client.close();
  // From now on every accept fails: close() ends the wait between two tries at once.
  failures = Infinity;
  const conn = await connect(); // wakes the pending accept; the next ones fail
  await new Promise((resolve) => setTimeout(resolve, 30));
  const started = performance.now();
  await server.close();
  assert.ok(performance.now() - started < 100, "close() waited for the retry timer");
  await conn.close().catch(() => {});
  await done();
});

Deno.test("auth hostile (unix): a nonce of the wrong size or form is refused with auth_failed before any proof", async () => {
  const { listener, connect, done } = await unixSocket.listen();
  const server = serve(listener, {
    codec,
    auth: { secret: "a secret of the test, 32 bytes or more" },
    handlers: {},
  });
  const hex = toHex(crypto.getRandomValues(new Uint8Array(64)));
  for (const nonce of ["", hex.slice(0, 62), hex.slice(0, 63), hex.slice(0, 65), hex, 7, null]) {
    const peer = new RawPeer(await connect());
    const body = helloBody({ auth: { method: "hmac-sha256-v2", nonce, role: "initiator" } });
    await peer.sendBytes(encodeFrame(new Uint8Array([0x01, ...body])));
    const frames = [];
    for (let frame; (frame = await peer.next()) !== undefined;) frames.push(frame);
    assert.deepEqual(frames.map((frame) => frame.kind), ["hello", "goodbye"], String(nonce));
    const goodbye = frames[1];
    assert.equal(goodbye.kind, "goodbye");
    const { code, reason } = JSON.parse(new TextDecoder().decode(goodbye.body));
    assert.equal(code, "auth_failed");
    assert.match(reason, /nonce is not 64 lowercase hex digits/);
    await peer.close();
  }
  await server.close();
  await done();
});

Deno.test("auth hostile: a secret under 16 bytes, which a peer could guess, is refused by serve() and by openChannel in either role, naming its length", async () => {
  const listener = await listenTcp({ port: 0 });
  // A string counts its UTF-8 bytes: 7 "é" are 14.
  const short = ["wrong", "correct horse", "a wrong secret", "é".repeat(7), new Uint8Array(15)];
  for (const secret of [...short, Buffer.alloc(8)]) {
    const bytes = typeof secret === "string" ? utf8.encode(secret).length : secret.length;
    const refused = (error: unknown) => {
      assert.ok(error instanceof TypeError, String(error));
      assert.match(error.message, /auth\.secret/);
      assert.match(error.message, new RegExp(`\\b${bytes} bytes\\b`));
      assert.match(error.message, /16 bytes/);
      assert.match(error.message, /crypto\.getRandomValues\(new Uint8Array\(32\)\)/);
      if (typeof secret === "string") assert.ok(!error.message.includes(secret), error.message);
      return true;
    };
    assert.throws(() => serve(listener, { codec, auth: { secret }, handlers: {} }), refused);
    for (const role of ["initiator", "responder"] as const) {
      const unused = new TransformStream<Uint8Array, Uint8Array>();
      const transport = { readable: unused.readable, writable: unused.writable } as Transport;
      await assert.rejects(
        (async () => await openChannel(transport, { codec, auth: { secret, role } }))(),
        refused,
      );
    }
  }
  await listener.close();
  // 16 bytes is enough, whether 16 ASCII characters or 8 two-byte ones.
  const enough = ["é".repeat(8), "0123456789abcdef", crypto.getRandomValues(new Uint8Array(16))];
  for (const secret of enough) {
    const listener = await listenTcp({ port: 0 });
    const { port } = listener.addr as Deno.NetAddr;
    const server = serve(listener, { codec, auth: { secret }, handlers: { ping: () => "pong" } });
    const client = await openChannel<{ ping(): string }>(await connectTcp({ port }), {
      codec,
      auth: { secret },
    });
    assert.equal(await client.remote.ping(), "pong");
    await client.close();
    await server.close();
  }
});
