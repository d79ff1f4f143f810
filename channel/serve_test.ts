import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { encodeFrame } from "../framing/mod.ts";
import { helloBody } from "../protocol/handshake.ts";
import { connectTcp, connectTls, listenTcp, listenTls } from "../transports/tcp.ts";
import type { Transport } from "../transports/types.ts";
import { connectUnix, listenUnix } from "../transports/unix.ts";
import { DEFAULT_HANDSHAKE_TIMEOUT, openChannel } from "./channel.ts";
import { ConnectionClosedError, HandshakeError } from "./errors.ts";
import { helloBody as rawHelloBody, json, RawPeer } from "./_test_raw_peer.ts";
import { encodeEnvelope, type Envelope } from "../protocol/envelope.ts";
import {
  DEFAULT_IDLE_TIMEOUT,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_MAX_HANDSHAKES,
  DEFAULT_SERVE_HANDSHAKE_TIMEOUT,
  type Listener,
  serve,
  type ServeOptions,
} from "./serve.ts";

const codec = jsonCodec();

async function tempSocket(): Promise<{ path: string; dir: string }> {
  const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
  return { dir, path: `${dir}/s` };
}

/** Reads until the server ends the connection; returns the bytes read. */
async function readToEnd(transport: Transport): Promise<number> {
  let bytes = 0;
  try {
    for await (const chunk of transport.readable) bytes += chunk.length;
  } catch {
    // A reset counts as the end too.
  }
  return bytes;
}

/**
 * Connects, retrying while the listener's backlog is full: a Unix socket connect then fails
 * with WouldBlock (EAGAIN) at once instead of waiting, as 1,000 connects at once make it do.
 */
async function connect(path: string): Promise<Transport> {
  for (let attempt = 0;; attempt++) {
    try {
      return await connectUnix(path);
    } catch (error) {
      if (!(error instanceof Deno.errors.WouldBlock) || attempt === 200) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
    }
  }
}

function helloFrame(): Uint8Array {
  const body = helloBody({
    codec: "json",
    maxFrameBytes: 1 << 20,
    maxInFlight: 8,
    streamWindowBytes: 1024,
  });
  const payload = new Uint8Array(body.length + 1);
  payload[0] = 0x01;
  payload.set(body, 1);
  return encodeFrame(payload);
}

Deno.test("serve: 1,000 concurrent good clients beside garbage, silent and aborted ones all succeed", async () => {
  const { dir, path } = await tempSocket();
  const errors: unknown[] = [];
  const handlers = {
    echo: async (n: number) => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return n;
    },
  };
  const server = serve(await listenUnix(path), {
    codec,
    handlers,
    // Room for every client at once, handshaking or not: this test is about concurrency (the
    // caps have their own tests below), and its silent clients must stay to the end.
    maxConnections: 2000,
    maxHandshakes: 2000,
    // Long, so that no good client's HELLO waits longer than this on a loaded machine (5 s
    // did not always do with a thousand handshakes queued while the whole suite runs): the
    // silent clients are ended by the server's close below instead.
    handshakeTimeout: 60_000,
    onError: (error) => errors.push(error),
  });
  const GOOD = 1000;
  const HOSTILE = 40;
  const good = Array.from({ length: GOOD }, async (_, i) => {
    const client = await openChannel<typeof handlers>(await connect(path), { codec });
    const results = await Promise.all([client.remote.echo(i), client.remote.echo(-i - 1)]);
    await client.close();
    return results;
  });
  const garbage = Array.from({ length: HOSTILE }, async (_, i) => {
    const transport = await connect(path);
    const writer = transport.writable.getWriter();
    const noise = crypto.getRandomValues(new Uint8Array(64 + i * 13));
    // Half send noise instead of a HELLO (it ends by a protocol error, or at the handshake
    // timeout when its first four bytes announce a frame longer than the noise), half a valid
    // HELLO then a frame of an unknown kind.
    noise[4] = 0x7f;
    const framed = encodeFrame(noise.subarray(4));
    await writer.write(i % 2 === 0 ? noise : new Uint8Array([...helloFrame(), ...framed]))
      .catch(() => {});
    writer.releaseLock();
    await readToEnd(transport);
    await transport.close();
  });
  const silent = Array.from({ length: HOSTILE }, async () => {
    const transport = await connect(path);
    await readToEnd(transport); // the server's close ends it
    await transport.close();
  });
  const aborted = Array.from({ length: HOSTILE }, async (_, i) => {
    const transport = await connect(path);
    if (i % 2 === 1) {
      const writer = transport.writable.getWriter();
      await writer.write(helloFrame()).catch(() => {});
      writer.releaseLock();
    }
    await transport.abort(new Error("gone"));
  });
  const results = await Promise.all(good);
  await Promise.all([...garbage, ...aborted]);
  // What stays is the silent ones, still in their handshake (the others' releases may lag).
  while (server.connections !== HOSTILE) await new Promise((resolve) => setTimeout(resolve, 5));
  for (const [i, [a, b]] of results.entries()) {
    assert.equal(a, i);
    assert.equal(b, -i - 1);
  }
  // Every hostile connection was reported, none took the server down.
  assert.ok(errors.length >= HOSTILE * 2, `${errors.length} errors reported`);
  const check = await openChannel<typeof handlers>(await connect(path), { codec });
  assert.equal(await check.remote.echo(7), 7);
  await check.close();
  await server.close();
  await Promise.all(silent);
  assert.equal(server.connections, 0);
  await assert.rejects(Deno.stat(path), Deno.errors.NotFound);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("serve: above maxConnections accepting pauses until a connection closes", async () => {
  assert.equal(DEFAULT_MAX_CONNECTIONS, 200);
  const listener = await listenTcp({ port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  let most = 0;
  const handlers = { ping: () => "pong" };
  const server = serve(listener, {
    codec,
    auth: false,
    handlers,
    maxConnections: 2,
    onOpen: () => most = Math.max(most, server.connections),
  });
  const first = await openChannel<typeof handlers>(await connectTcp({ port }), { codec });
  const second = await openChannel<typeof handlers>(await connectTcp({ port }), { codec });
  let thirdOpen = false;
  const third = connectTcp({ port }).then((transport) =>
    openChannel<typeof handlers>(transport, { codec })
  ).then((channel) => {
    thirdOpen = true;
    return channel;
  });
  // Many round trips on the held connections: the server is running, yet the third waits.
  for (let i = 0; i < 50; i++) {
    assert.equal(await first.remote.ping(), "pong");
    assert.equal(await second.remote.ping(), "pong");
  }
  assert.equal(thirdOpen, false);
  assert.equal(server.connections, 2);
  await first.close();
  const channel = await third;
  assert.equal(await channel.remote.ping(), "pong");
  assert.equal(most, 2);
  await server.close();
  await Promise.all([second.closed, channel.closed]);
});

/** A listener of `kind` and how to connect to it; `cleanup` removes a Unix socket's directory. */
async function listenerOf(kind: "tcp" | "unix"): Promise<{
  listener: Listener;
  connect: () => Promise<Transport>;
  cleanup: () => Promise<void>;
}> {
  if (kind === "tcp") {
    const listener = await listenTcp({ port: 0 });
    const { port } = listener.addr as Deno.NetAddr;
    return { listener, connect: () => connectTcp({ port }), cleanup: async () => {} };
  }
  const { dir, path } = await tempSocket();
  return {
    listener: await listenUnix(path),
    connect: () => connect(path),
    cleanup: () => Deno.remove(dir, { recursive: true }),
  };
}

/**
 * Fills the server with `silent` connections that never send a HELLO, then connects a good
 * client and makes a call. The handshake timeout is a minute: the good client must get in
 * long before it, by taking the place of the oldest silent connection. Returns nothing;
 * asserts which silent connections the server ended, and its count of connections.
 */
async function silentFlood(
  kind: "tcp" | "unix",
  silent: number,
  options: Pick<ServeOptions, "maxConnections" | "maxHandshakes">,
): Promise<void> {
  const cap = Math.min(
    options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
    options.maxHandshakes ?? DEFAULT_MAX_HANDSHAKES,
  );
  const { listener, connect, cleanup } = await listenerOf(kind);
  const handlers = { echo: (n: number) => n };
  const errors: unknown[] = [];
  const server = serve(listener, {
    codec,
    auth: false,
    handlers,
    ...options,
    handshakeTimeout: 60_000,
    onError: (error) => errors.push(error),
  });
  const ended: number[] = [];
  const reading: Promise<void>[] = [];
  for (let i = 0; i < silent; i++) {
    const transport = await connect();
    reading.push(
      readToEnd(transport).then(() => {
        ended.push(i);
        return transport.close();
      }),
    );
  }
  // The server holds the newest `cap` of them and has ended the others.
  while (server.connections !== cap || ended.length !== silent - cap) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  // Well before the handshake timeout (a minute): in the old server's flood the good client
  // waited for it.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("the good client waited 20 s")), 20_000);
  });
  const client = await Promise.race([
    connect().then((transport) => openChannel<typeof handlers>(transport, { codec })),
    bound,
  ]);
  assert.equal(await Promise.race([client.remote.echo(42), bound]), 42);
  clearTimeout(timer);
  // It took the place of the oldest silent connection, which the server ended.
  while (ended.length !== silent - cap + 1) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual(ended.toSorted((a, b) => a - b), Array.from(ended, (_, i) => i));
  while (server.connections !== cap) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.ok(errors.length >= silent - cap + 1);
  assert.ok(errors[0] instanceof HandshakeError, String(errors[0]));
  assert.match(errors[0].message, /Dropped during its handshake/);
  await client.close();
  while (server.connections !== cap - 1) await new Promise((resolve) => setTimeout(resolve, 5));
  await server.close();
  await Promise.all(reading);
  assert.equal(ended.length, silent);
  assert.equal(server.connections, 0);
  await cleanup();
}

for (const kind of ["tcp", "unix"] as const) {
  Deno.test(`serve over ${kind}: silent connections filling maxHandshakes do not keep a good client out`, async () => {
    assert.equal(DEFAULT_MAX_HANDSHAKES, 128);
    await silentFlood(kind, 4, { maxHandshakes: 4 });
  });

  Deno.test(`serve over ${kind}: five times maxHandshakes silent connections: the oldest are ended, a good client gets in`, async () => {
    await silentFlood(kind, 20, { maxHandshakes: 4 });
  });

  Deno.test(`serve over ${kind}: silent connections filling maxConnections do not keep a good client out`, async () => {
    await silentFlood(kind, 4, { maxConnections: 4 });
  });
}

Deno.test("serve: under pressure a silent newcomer is dropped before an older one that spoke, with GOODBYE server_busy", async () => {
  const { dir, path } = await tempSocket();
  const secret = "a secret of the test, 32 bytes or more";
  const errors: unknown[] = [];
  const handlers = { echo: (n: number) => n };
  const server = serve(await listenUnix(path), {
    codec,
    handlers,
    auth: { secret },
    maxHandshakes: 2,
    handshakeTimeout: 60_000,
    onError: (error) => errors.push(error),
  });
  // Two silent connections fill the share while there is room: each has half a second.
  const first = [new RawPeer(await connectUnix(path)), new RawPeer(await connectUnix(path))];
  // Behind them wait one that says HELLO (asking for auth) at once and then nothing, and one
  // that says nothing. Each gets in by dropping one of the first two, under pressure: the one
  // that spoke keeps half a second, the silent one has 100 ms.
  const spoken = new RawPeer(await connectUnix(path));
  const nonce = Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16))
    .map((hex) => hex.padStart(2, "0")).join("");
  const auth = { method: "hmac-sha256-v2", nonce, role: "initiator" };
  await spoken.send({ kind: "hello", body: rawHelloBody({ auth }) });
  const silent = new RawPeer(await connectUnix(path));
  // A good client behind them all takes the silent newcomer's place, not the older one's.
  const client = await openChannel<typeof handlers>(await connectUnix(path), {
    codec,
    auth: { secret },
  });
  assert.equal(await client.remote.echo(5), 5);
  for (const dropped of [...first, silent]) {
    const goodbye = await dropped.goodbye();
    assert.equal(goodbye.code, "server_busy");
    assert.match(String(goodbye.reason), /maxHandshakes \(2\)/);
    await dropped.ended();
  }
  // The one that spoke is still held, in its handshake.
  assert.equal(server.connections, 2);
  // Reported as the HandshakeError itself, as a client's openChannel would throw it.
  assert.equal(errors.length, 3);
  for (const error of errors) {
    assert.ok(error instanceof HandshakeError);
    assert.equal(error.code, "server_busy");
  }
  await client.close();
  await server.close();
  await spoken.ended(); // failed by the server's close
  await Promise.all([spoken, silent, ...first].map((peer) => peer.close()));
  await Deno.remove(dir, { recursive: true });
});

Deno.test("serve: a client dropped in its handshake is told server_busy", async () => {
  const { dir, path } = await tempSocket();
  const secret = "a secret of the test, 32 bytes or more";
  const server = serve(await listenUnix(path), {
    codec,
    handlers: {},
    auth: { secret },
    maxHandshakes: 1,
    handshakeTimeout: 60_000,
  });
  // A channel whose HELLO never leaves: its transport's writes are held until it is dropped.
  const raw = await connectUnix(path);
  let release!: () => void;
  const held = new Promise<void>((resolve) => release = resolve);
  const writer = raw.writable.getWriter();
  const stalled: Transport = {
    readable: raw.readable,
    writable: new WritableStream({
      async write(chunk, controller) {
        const aborted = new Promise((resolve) => {
          controller.signal.addEventListener("abort", resolve, { once: true });
        });
        if (await Promise.race([held.then(() => false), aborted.then(() => true)])) return;
        await writer.write(chunk).catch(() => {});
      },
    }),
    // Ending it ends the stall as a socket's end fails its pending write.
    close: () => (release(), raw.close()),
    abort: (reason) => (release(), raw.abort(reason)),
    [Symbol.asyncDispose]: () => (release(), raw.close()),
  };
  const stalledClient = openChannel(stalled, { codec, auth: { secret }, handshakeTimeout: 60_000 });
  const newcomer = await connectUnix(path); // takes the stalled one's place after 100 ms
  const error = await stalledClient.then(
    () => assert.fail("the stalled client got in"),
    (error: unknown) => error,
  );
  assert.ok(error instanceof HandshakeError, String(error));
  assert.equal(error.code, "server_busy");
  assert.match(error.message, /Dropped during its handshake for a newer connection/);
  await newcomer.close();
  await server.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("serve: a connection that sends no HELLO is closed after handshakeTimeout", async () => {
  assert.equal(DEFAULT_SERVE_HANDSHAKE_TIMEOUT, 5_000);
  assert.ok(DEFAULT_SERVE_HANDSHAKE_TIMEOUT < DEFAULT_HANDSHAKE_TIMEOUT);
  const { dir, path } = await tempSocket();
  const errors: unknown[] = [];
  const server = serve(await listenUnix(path), {
    codec,
    handshakeTimeout: 50,
    onError: (error) => errors.push(error),
  });
  const silent = await connectUnix(path);
  assert.ok(await readToEnd(silent) > 0); // the server's HELLO, then the end
  await silent.close();
  while (server.connections > 0) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.ok(errors[0] instanceof HandshakeError, String(errors[0]));
  assert.equal(errors[0].code, "handshake_timeout");
  assert.match(errors[0].message, /handshakeTimeout \(50 ms\)/);
  await server.close();
  await Deno.remove(dir, { recursive: true });
});

const tlsFile = (name: string) =>
  Deno.readTextFile(new URL(`../testdata/tls/${name}`, import.meta.url));

/** Serves `listener` with `options`, makes one call from a client over `connect`, closes. */
async function callOnce(
  listener: Listener,
  options: Pick<ServeOptions, "auth" | "insecure">,
  connect: (port: number) => Promise<Transport>,
): Promise<void> {
  const handlers = { ping: () => "pong" };
  const server = serve(listener, { codec, handlers, ...options });
  const { port } = listener.addr as Deno.NetAddr;
  const client = await openChannel<typeof handlers>(await connect(port), {
    codec,
    auth: options.auth === false ? undefined : options.auth,
  });
  assert.equal(await client.remote.ping(), "pong");
  await server.close();
  await client.closed;
}

Deno.test("serve: a TCP or TLS listener without auth is refused with a TypeError naming auth: false", async () => {
  const tcp = await listenTcp({ port: 0 });
  const tls = await listenTls({
    cert: await tlsFile("server.pem"),
    key: await tlsFile("server.key"),
  });
  assert.equal(tcp.encryption, "none");
  assert.equal(tls.encryption, "tls");
  for (const listener of [tcp, tls]) {
    assert.throws(
      () => serve(listener, { codec, handlers: { ping: () => "pong" } }),
      (error: Error) =>
        error instanceof TypeError && /without auth/.test(error.message) &&
        error.message.includes("auth: false") && error.message.includes("any local user"),
    );
  }
  // The listeners are still the caller's, and usable: with auth: false they serve.
  await callOnce(tcp, { auth: false }, (port) => connectTcp({ port }));
  const caCerts = [await tlsFile("ca.pem")];
  await callOnce(tls, { auth: false }, (port) => connectTls({ port, caCerts }));
});

Deno.test("serve: plain TCP off loopback needs auth, or auth: false with insecure: true", async () => {
  // Bound to every interface; the client connects over loopback only.
  const any = () => listenTcp({ hostname: "0.0.0.0", port: 0 });
  const connect = (port: number) => connectTcp({ port });
  for (const options of [{}, { insecure: true }, { auth: false } as const]) {
    const listener = await any();
    assert.throws(
      () => serve(listener, { codec, ...options }),
      (error: Error) =>
        error instanceof TypeError &&
        error.message.includes(options.auth === false ? "insecure: true" : "auth: false"),
    );
    await listener.close();
  }
  await callOnce(await any(), { auth: false, insecure: true }, connect);
  await callOnce(await any(), { auth: { secret: "a secret both ends hold, 32 bytes+" } }, connect);
  // TLS off loopback: auth: false is enough, the traffic is encrypted.
  const caCerts = [await tlsFile("ca.pem")];
  await callOnce(
    await listenTls({
      hostname: "0.0.0.0",
      cert: await tlsFile("server.pem"),
      key: await tlsFile("server.key"),
    }),
    { auth: false },
    (port) => connectTls({ port, caCerts }),
  );
});

Deno.test("serve: a Unix socket needs no auth and no opt-out", async () => {
  const { dir, path } = await tempSocket();
  const listener = await listenUnix(path);
  assert.equal(listener.encryption, undefined);
  await callOnce(listener, {}, () => connectUnix(path));
  await Deno.remove(dir, { recursive: true });
});

Deno.test("serve: an idle connection is closed with a GOODBYE, a busy one is not", async () => {
  assert.equal(DEFAULT_IDLE_TIMEOUT, 300_000);
  const { dir, path } = await tempSocket();
  const gate = Promise.withResolvers<void>();
  const handlers = {
    ping: () => "pong",
    park: async () => {
      await gate.promise;
      return "done";
    },
  };
  const server = serve(await listenUnix(path), { codec, handlers, idleTimeout: 100 });
  const idle = await openChannel<typeof handlers>(await connectUnix(path), { codec });
  const busy = await openChannel<typeof handlers>(await connectUnix(path), { codec });
  assert.equal(await idle.remote.ping(), "pong");
  const parked = busy.remote.park();
  // The idle client's connection ends gracefully: closed resolves, it does not reject.
  await idle.closed;
  // Well past the idle timeout, the call in flight keeps the busy one open.
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.equal(await busy.remote.ping(), "pong"); // still open: a closing channel refuses calls
  gate.resolve();
  assert.equal(await parked, "done");
  await busy.closed; // then it idles out too
  // The next call says why: the server's GOODBYE named its idleTimeout.
  await assert.rejects(idle.remote.ping(), {
    name: "ConnectionClosedError",
    message: "The channel is closed: the peer said goodbye: idle for its idleTimeout (100 ms)",
  });
  while (server.connections > 0) await new Promise((resolve) => setTimeout(resolve, 5));
  await server.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("serve: close() stops accepting, lets an in-flight call finish and removes the socket file", async () => {
  const { dir, path } = await tempSocket();
  const started = Promise.withResolvers<void>();
  const gate = Promise.withResolvers<void>();
  const handlers = {
    slow: async (n: number) => {
      started.resolve();
      await gate.promise;
      return n * 2;
    },
  };
  const server = serve(await listenUnix(path), { codec, handlers });
  const client = await openChannel<typeof handlers>(await connectUnix(path), { codec });
  const call = client.remote.slow(21);
  await started.promise;
  const closing = server.close();
  // Stopped accepting: the listener and its file are gone while the call still runs. (Deno
  // frees the listening socket once its pending accept has settled, a turn or so after
  // close(): until then the kernel could still queue a connection, which nobody accepts.)
  for (let waited = 0; await Deno.stat(path).then(() => true, () => false); waited += 5) {
    assert.ok(waited < 2000, "the socket file is still there 2 s after close()");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await assert.rejects(() => connectUnix(path));
  gate.resolve();
  assert.equal(await call, 42);
  await closing;
  await server.finished;
  await client.closed; // graceful on the client's side too
  assert.equal(server.connections, 0);
  await assert.rejects(Deno.stat(path), Deno.errors.NotFound);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("serve: an aborted signal shuts down; connections in their handshake are failed", async () => {
  const { dir, path } = await tempSocket();
  const stop = new AbortController();
  const server = serve(await listenUnix(path), { codec, signal: stop.signal });
  const client = await openChannel(await connectUnix(path), { codec });
  const silent = await connectUnix(path);
  while (server.connections < 2) await new Promise((resolve) => setTimeout(resolve, 5));
  stop.abort();
  await server.finished;
  await client.closed;
  // It got the server's HELLO and GOODBYE, then the end.
  assert.ok(await readToEnd(silent) > 0);
  await silent.close();
  await assert.rejects(Deno.stat(path), Deno.errors.NotFound);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("serve: a handler factory that throws refuses its connection only", async () => {
  const { dir, path } = await tempSocket();
  const errors: unknown[] = [];
  const server = serve(await listenUnix(path), {
    codec,
    handlers: ({ id }) => {
      if (id === 1) throw new Error("no handlers for you");
      return { who: () => id };
    },
    onError: (error) => errors.push(error),
  });
  // The factory runs once the client's HELLO is accepted; the server's HELLO went at once, so
  // the client may have opened: either way it is refused with GOODBYE aborted, served nothing.
  const first = await openChannel<{ who(): number }>(await connectUnix(path), {
    codec,
    handshakeTimeout: 2000,
  }).catch((error) => error);
  const refusal = first instanceof Error
    ? first
    : await first.closed.then(() => undefined, (e: Error) => e);
  assert.match(
    String(refusal?.cause?.message ?? refusal?.message),
    /could not serve this connection/,
  );
  if (!(first instanceof Error)) {
    await assert.rejects(first.remote.who(), ConnectionClosedError);
  }
  const second = await openChannel<{ who(): number }>(await connectUnix(path), { codec });
  assert.equal(await second.remote.who(), 2);
  assert.equal((errors[0] as Error).message, "no handlers for you");
  await server.close();
  await second.closed;
  await Deno.remove(dir, { recursive: true });
});

Deno.test("serve: options out of range are refused", async () => {
  const listener = await listenTcp({ port: 0 });
  const auth = false;
  assert.throws(() => serve(listener, { codec, auth, maxConnections: 0 }), RangeError);
  assert.throws(() => serve(listener, { codec, auth, idleTimeout: 0 }), RangeError);
  assert.throws(() => serve(listener, { codec, auth, maxHandshakes: 0 }), RangeError);
  assert.throws(() => serve(listener, { codec, auth, handshakeTimeout: 0 }), RangeError);
  await listener.close();
});

Deno.test("serve: a connection's signal fires once it is closed, read early or late", async () => {
  const { dir, path } = await tempSocket();
  const early: AbortSignal[] = [];
  const connections: Array<{ signal: AbortSignal }> = [];
  const server = serve(await listenUnix(path), {
    codec,
    handlers: (connection) => {
      connections.push(connection);
      if (connections.length === 1) early.push(connection.signal); // read while open
      return { ping: () => "pong" };
    },
  });
  for (let i = 0; i < 2; i++) {
    const client = await openChannel<{ ping(): string }>(await connectUnix(path), { codec });
    assert.equal(await client.remote.ping(), "pong");
    if (i === 0) assert.equal(early[0].aborted, false);
    await client.close();
  }
  await server.close();
  assert.equal(early[0].aborted, true);
  // Read only after the connection closed: already aborted.
  assert.equal(connections[1].signal.aborted, true);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("serve: an auth secret it cannot use is refused at serve(), not on every connection", async () => {
  const listener = await listenTcp({ port: 0 });
  try {
    for (const auth of [{ secret: "" }, {}, { secret: new Uint8Array(0) }]) {
      assert.throws(
        () => serve(listener, { auth: auth as { secret: string } }),
        {
          name: "TypeError",
          message: /auth\.secret must be a string or Uint8Array of 16 bytes or more/,
        },
      );
    }
  } finally {
    await listener.close();
  }
});

/** Whether python3 runs here (it can reset a connection: SO_LINGER 0, which Deno cannot set). */
const havePython = await new Deno.Command("python3", { args: ["-c", "0"] }).output()
  .then((output) => output.success, () => false);
if (!havePython) console.warn("serve_test: python3 is not installed; skipping the reset case");

Deno.test({
  name: "serve: connections reset before accept() do not hold up the next client",
  ignore: !havePython,
  async fn() {
    const listener = await listenTcp({ port: 0 });
    const { port } = listener.addr as Deno.NetAddr;
    const errors: unknown[] = [];
    const server = serve(listener, {
      auth: false,
      handlers: { echo: (n: number) => n },
      onError: (error) => void errors.push(error),
    });
    // 40 connections a second, each reset at once: with a pause per accept() failure,
    // the server would take 10 a second and a good client would wait behind them.
    const resetter = new Deno.Command("python3", {
      args: [
        "-c",
        `
import socket, struct, time
end = time.time() + 3
while time.time() < end:
    s = socket.socket(); s.connect(("127.0.0.1", ${port}))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); s.close()
    time.sleep(0.025)
`,
      ],
    }).spawn();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const started = performance.now();
    const client = await openChannel<{ echo(n: number): number }>(await connectTcp({ port }));
    assert.equal(await client.remote.echo(42), 42);
    const waited = performance.now() - started;
    await client.close();
    assert.ok((await resetter.status).success);
    await server.close();
    // Generous: a pause per reset piles up to seconds within this window.
    assert.ok(waited < 1_000, `a good client waited ${Math.round(waited)} ms behind resets`);
  },
});

Deno.test("serve over TLS: silent connections filling maxConnections do not keep a client out", async () => {
  // TCP connections to the TLS port that never send a ClientHello: a GOODBYE to one is never
  // written, so dropping one must not wait for it.
  const [cert, key, ca] = await Promise.all(
    ["server.pem", "server.key", "ca.pem"].map((name) =>
      Deno.readTextFile(new URL(`../testdata/tls/${name}`, import.meta.url))
    ),
  );
  const listener = await listenTls({ port: 0, cert, key });
  const { port } = listener.addr as Deno.NetAddr;
  const secret = "the server's secret";
  const server = serve(listener, {
    auth: { secret },
    handlers: { echo: (n: number) => n },
    maxConnections: 4,
    handshakeTimeout: 60_000,
  });
  const silent: Deno.Conn[] = [];
  for (let i = 0; i < 12; i++) silent.push(await Deno.connect({ hostname: "127.0.0.1", port }));
  const started = performance.now();
  const client = await openChannel<{ echo(n: number): number }>(
    await connectTls({ hostname: "localhost", port, caCerts: [ca] }),
    { auth: { secret } },
  );
  assert.equal(await client.remote.echo(42), 42);
  const waited = performance.now() - started;
  await client.close();
  for (const conn of silent) conn.close();
  await server.close();
  // Generous: at two seconds a drop, the 9 drops ahead of it take 18 s.
  assert.ok(waited < 5_000, `the client waited ${Math.round(waited)} ms`);
});

Deno.test("serve: a client that stops reading is closed after idleTimeout, however often it pings", async () => {
  const { dir, path } = await tempSocket();
  const errors: Error[] = [];
  const server = serve(await listenUnix(path), {
    codec,
    handlers: { big: () => "x".repeat(512 << 10) },
    idleTimeout: 300,
    drainTimeout: 200,
    onError: (error) => errors.push(error as Error),
  });
  // A raw client: HELLO, calls whose answers fill the socket, then pings, and it never reads.
  const conn = await Deno.connect({ transport: "unix", path });
  const send = async (envelope: Envelope) => {
    const bytes = encodeFrame(encodeEnvelope(envelope));
    for (let sent = 0; sent < bytes.length;) sent += await conn.write(bytes.subarray(sent));
  };
  await send({ kind: "hello", body: rawHelloBody() });
  for (let id = 1; id <= 4; id++) {
    await send({ kind: "call", id, flags: 0, timeoutMs: 0, method: "big", body: json(null) });
  }
  const started = performance.now();
  let nonce = 0;
  while (errors.length === 0 && performance.now() - started < 5_000) {
    await send({ kind: "ping", nonce: ++nonce }).catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.ok(errors.length > 0, "the server still holds the client that reads nothing");
  assert.match(String(errors[0].cause ?? errors[0].message), /read nothing/);
  conn.close();
  await server.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("serve: a client that reads a large answer slowly is not taken for one that reads nothing", async () => {
  const { dir, path } = await tempSocket();
  const errors: Error[] = [];
  const server = serve(await listenUnix(path), {
    codec,
    handlers: { big: () => "x".repeat(6 << 20) },
    idleTimeout: 300,
    onError: (error) => errors.push(error as Error),
  });
  // One frame of 6 MiB, read 64 KiB every 10 ms: it takes several idle timeouts to arrive, and
  // every one of them sees bytes move.
  const conn = await Deno.connect({ transport: "unix", path });
  const hello = encodeFrame(encodeEnvelope({
    kind: "hello",
    body: rawHelloBody({ maxFrameBytes: 16 << 20 }),
  }));
  const call = encodeFrame(encodeEnvelope({
    kind: "call",
    id: 1,
    flags: 0,
    timeoutMs: 0,
    method: "big",
    body: json(null),
  }));
  for (const bytes of [hello, call]) {
    for (let sent = 0; sent < bytes.length;) sent += await conn.write(bytes.subarray(sent));
  }
  const buffer = new Uint8Array(64 << 10);
  let received = 0;
  while (received < 6 << 20) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    const n = await conn.read(buffer);
    if (n === null) break;
    received += n;
  }
  assert.ok(received >= 6 << 20, `${received} bytes read`);
  assert.deepEqual(errors.map((error) => error.message), []);
  conn.close();
  await server.close();
  await Deno.remove(dir, { recursive: true });
});
