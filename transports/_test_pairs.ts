// The one set of test transport pairs: two connected transports of each kind (in memory, a
// real Unix socket, real TCP and TLS over loopback) for the tests of every layer (framing,
// transports, channel) and the benchmarks. It lives at the lowest layer that has transports,
// so no lower layer's test imports a higher layer's helper.

import assert from "node:assert/strict";
import { connectTcp, connectTls, listenTcp, listenTls } from "./tcp.ts";
import { memoryPair } from "./memory.ts";
import type { Listener, Transport } from "./types.ts";
import { connectUnix, listenUnix } from "./unix.ts";
import { connectNats, listenNats } from "./nats.ts";
import { haveNatsServer, startNatsServer } from "./_test_nats_server.ts";

/** A connected pair of transports and how to release what they hold (both ends included). */
export interface TestPair {
  /** The accepting end (the server's side). */
  a: Transport;
  /** The connecting end (the client's side). */
  b: Transport;
  /** Closes both ends and releases the listener and its files; safe after they closed. */
  cleanup(): Promise<void>;
}

/** One way to connect two transports. */
export interface TransportKind {
  name: string;
  pair(): Promise<TestPair>;
}

/** The in-memory pair. */
export const memory: TransportKind = {
  name: "memory",
  pair() {
    const [a, b] = memoryPair();
    return Promise.resolve(released(a, b, () => Promise.resolve()));
  },
};

/** Both ends of a Unix socket connection under a fresh temporary directory. */
export const unix: TransportKind = {
  name: "unix",
  async pair() {
    const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
    const listener = await listenUnix(`${dir}/s`);
    const [b, a] = await connectPair(listener, () => connectUnix(`${dir}/s`));
    await listener.close();
    return released(a, b, () => Deno.remove(dir, { recursive: true }));
  },
};

/** Both ends of a TCP connection over loopback. */
export const tcp: TransportKind = {
  name: "tcp",
  async pair() {
    const listener = await listenTcp();
    const port = (listener.addr as Deno.NetAddr).port;
    const [b, a] = await connectPair(listener, () => connectTcp({ port }));
    await listener.close();
    return released(a, b, () => Promise.resolve());
  },
};

const TLS_DIR = new URL("../testdata/tls/", import.meta.url);

/** Both ends of a TLS connection over loopback, with the test certificates (testdata/tls). */
export const tls: TransportKind = {
  name: "tls",
  async pair() {
    const read = (name: string) => Deno.readTextFile(new URL(name, TLS_DIR));
    const listener = await listenTls({
      cert: await read("server.pem"),
      key: await read("server.key"),
    });
    const port = (listener.addr as Deno.NetAddr).port;
    const ca = await read("ca.pem");
    const [b, a] = await connectPair(listener, () => connectTls({ port, caCerts: [ca] }));
    await listener.close();
    return released(a, b, () => Promise.resolve());
  },
};

/**
 * Both ends of a NATS connection (transports/nats.ts) through a fresh nats-server on a loopback
 * port, stopped by `cleanup()`.
 */
export const nats: TransportKind = {
  name: "nats",
  async pair() {
    const server = await startNatsServer();
    const [serverNc, clientNc] = await Promise.all([server.connect(), server.connect()]);
    const listener = await listenNats(serverNc, "pair");
    const [b, a] = await connectPair(listener, () => connectNats(clientNc, "pair"));
    await listener.close();
    return released(a, b, () => server.stop());
  },
};

/** The kinds the channel tests run over: NATS too where nats-server is installed. */
export const transportKinds: TransportKind[] = haveNatsServer ? [memory, unix, nats] : [
  memory,
  unix,
];

/** Connects with `connect` and returns `[connecting end, accepted end]`. */
export async function connectPair(
  listener: Listener,
  connect: () => Promise<Transport>,
): Promise<[Transport, Transport]> {
  const accepted = listener.accept();
  const a = await connect();
  return [a, await accepted];
}

function released(a: Transport, b: Transport, release: () => Promise<void>): TestPair {
  return {
    a,
    b,
    async cleanup() {
      await Promise.all([a.close(), b.close()]);
      await release();
    },
  };
}

/** Leaves a socket file at `path` whose listener was killed (a stale file). */
export async function leaveStaleSocket(path: string): Promise<void> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `Deno.listen({ transport: "unix", path: ${
        JSON.stringify(path)
      } }); console.log("ready"); setInterval(() => {}, 60_000);`,
    ],
    stdout: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  assert.equal((await reader.read()).value?.trim(), "ready");
  child.kill("SIGKILL");
  await child.status;
  await reader.cancel();
  assert.ok((await Deno.lstat(path)).isSocket, "the dead process left its socket file");
}

/** A fresh temporary directory under /tmp (short, for socket paths). */
export function tempDir(): Promise<string> {
  return Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
}

/** Sends three bytes from `a`, half-closes, checks `b` reads them, closes both. */
export async function echoOnce(a: Transport, b: Transport): Promise<void> {
  const writer = a.writable.getWriter();
  await writer.write(new Uint8Array([1, 2, 3]));
  await writer.close();
  assert.deepEqual(await Array.fromAsync(b.readable), [new Uint8Array([1, 2, 3])]);
  await Promise.all([a.close(), b.close()]);
}

/**
 * Listens at `<dir>/app.sock` with `listen` and checks the socket file's rules: owner-only,
 * nothing else left in the directory (the private bind directory is gone), the listener's
 * address, and the file removed on close. Returns the path, gone by then.
 */
export async function checkSocketFile(
  dir: string,
  listen: (path: string) => Promise<Listener>,
): Promise<string> {
  const path = `${dir}/app.sock`;
  const listener = await listen(path);
  const info = await Deno.lstat(path);
  assert.ok(info.isSocket);
  assert.equal(info.mode! & 0o777, 0o600);
  assert.deepEqual(listener.addr, { transport: "unix", path });
  assert.deepEqual((await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name), ["app.sock"]);
  await listener.close();
  await assert.rejects(Deno.lstat(path), Deno.errors.NotFound);
  return path;
}
