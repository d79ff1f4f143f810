import assert from "node:assert/strict";
import { TransportClosedError } from "../errors.ts";
import { denoTlsClientCode, stuckSocketPeer, testTransportConformance } from "./_conformance.ts";
import { connectPair, tcp, tls } from "./_test_pairs.ts";
import { connectTcp, connectTls, listenTcp, listenTls } from "./tcp.ts";
import type { Listener } from "./types.ts";

const TLS_DIR = new URL("../testdata/tls/", import.meta.url);
const cert = await Deno.readTextFile(new URL("server.pem", TLS_DIR));
const key = await Deno.readTextFile(new URL("server.key", TLS_DIR));
const ca = await Deno.readTextFile(new URL("ca.pem", TLS_DIR));

testTransportConformance({
  name: "tcp",
  pair: tcp.pair,
  stuckPeer: async () => {
    const listener = await listenTcp();
    return stuckSocketPeer(listener, `await Deno.connect({ port: ${portOf(listener)} })`);
  },
  abortSeenByPeer: "end",
});

testTransportConformance({
  name: "tls",
  pair: tls.pair,
  stuckPeer: async () => {
    const listener = await listenTls({ cert, key });
    return stuckSocketPeer(
      listener,
      denoTlsClientCode(portOf(listener), ca),
    );
  },
  abortSeenByPeer: "end",
});

Deno.test("tcp: listens on loopback unless told otherwise", async () => {
  const listener = await listenTcp();
  const addr = listener.addr as Deno.NetAddr;
  assert.equal(addr.hostname, "127.0.0.1");
  assert.ok(addr.port > 0);
  await listener.close();
  await assert.rejects(connectTcp({ port: addr.port }), Deno.errors.ConnectionRefused);
});

Deno.test("tcp: a listener's close() ends a pending iteration and is idempotent", async () => {
  const listener = await listenTcp();
  const iterating = Array.fromAsync(listener);
  await new Promise((resolve) => setTimeout(resolve, 10));
  await Promise.all([listener.close(), listener.close()]);
  assert.deepEqual(await iterating, []);
});

Deno.test("tls: a client that does not trust the certificate fails to connect", async () => {
  const listener = await listenTls({ cert, key });
  const serving = (async () => {
    for await (const t of listener) {
      // The failed handshake shows up as a read error on the server's transport.
      await assert.rejects(Array.fromAsync(t.readable));
      await t.close();
      return;
    }
  })();
  await assert.rejects(connectTls({ port: portOf(listener) }), Deno.errors.InvalidData);
  await serving;
  await listener.close();
});

Deno.test("tls: the certificate is checked against the name connected to", async () => {
  const listener = await listenTls({ cert, key });
  const accepting = listener[Symbol.asyncIterator]().next();
  // The test certificate names localhost, 127.0.0.1 and ::1.
  const client = await connectTls({
    port: portOf(listener),
    caCerts: [ca],
    serverName: "localhost",
  });
  const server = (await accepting).value!;
  const writer = client.writable.getWriter();
  await writer.write(new Uint8Array([1]));
  await writer.close();
  assert.deepEqual(await Array.fromAsync(server.readable), [new Uint8Array([1])]);
  await Promise.all([client.close(), server.close()]);
  const refusing = listener[Symbol.asyncIterator]().next();
  await assert.rejects(
    connectTls({ port: portOf(listener), caCerts: [ca], serverName: "example.com" }),
    Deno.errors.InvalidData,
  );
  const refused = (await refusing).value!;
  await Array.fromAsync(refused.readable).catch(() => {});
  await refused.close();
  await listener.close();
});

function portOf(listener: Listener): number {
  return (listener.addr as Deno.NetAddr).port;
}

Deno.test("tcp listener: accept() returns each connection, and rejects once the listener closes", async () => {
  const listener = await listenTcp({ port: 0 });
  const [client, server] = await connectPair(
    listener,
    () => connectTcp({ port: portOf(listener) }),
  );
  const pending = listener.accept();
  await listener.close();
  await assert.rejects(pending, TransportClosedError);
  await assert.rejects(listener.accept(), TransportClosedError);
  await Promise.all([client.close(), server.close()]);
});
