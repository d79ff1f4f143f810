// The node:net sockets Node and Bun use (transports/_node_socket.ts), checked here under Deno,
// which runs node:net too: the transport conformance suite, the Unix socket file's rules, and
// each side against Deno's own sockets. runtimes/_cases.ts runs them on Node and Bun.

import assert from "node:assert/strict";
import { nodeConnectTcp, nodeConnectUnix, nodeListenTcp, nodeListenUnix } from "./_node_socket.ts";
import { stuckSocketPeer, testTransportConformance } from "./_conformance.ts";
import {
  checkSocketFile,
  connectPair,
  echoOnce,
  leaveStaleSocket,
  tempDir,
} from "./_test_pairs.ts";
import { connectTcp, listenTcp } from "./tcp.ts";
import type { Listener, Transport } from "./types.ts";
import { connectUnix, listenUnix } from "./unix.ts";

testTransportConformance({
  name: "node:net unix",
  async pair() {
    const dir = await tempDir();
    const listener = await nodeListenUnix(`${dir}/s`);
    const [b, a] = await connectPair(listener, () => nodeConnectUnix(`${dir}/s`));
    await listener.close();
    return { a, b, cleanup: () => Deno.remove(dir, { recursive: true }) };
  },
  stuckPeer: async () => {
    const dir = await tempDir();
    const listener = await nodeListenUnix(`${dir}/s`);
    return stuckSocketPeer(
      listener,
      `await Deno.connect({ transport: "unix", path: ${JSON.stringify(`${dir}/s`)} })`,
      () => Deno.remove(dir, { recursive: true }),
    );
  },
  abortSeenByPeer: "end",
});

testTransportConformance({
  name: "node:net tcp",
  async pair() {
    const listener = await nodeListenTcp("127.0.0.1", 0);
    const port = (listener.addr as Deno.NetAddr).port;
    const [b, a] = await connectPair(listener, () => nodeConnectTcp("127.0.0.1", port));
    await listener.close();
    return { a, b };
  },
  stuckPeer: async () => {
    const listener = await nodeListenTcp("127.0.0.1", 0);
    const port = (listener.addr as Deno.NetAddr).port;
    return stuckSocketPeer(listener, `await Deno.connect({ port: ${port} })`);
  },
  abortSeenByPeer: "end",
});

Deno.test("node:net unix: the socket file is owner-only from the start, and removed on close", async () => {
  const dir = await tempDir();
  const path = await checkSocketFile(dir, nodeListenUnix);
  await assert.rejects(nodeConnectUnix(path), { code: "ENOENT" });
  await Deno.remove(dir);
});

Deno.test("node:net unix: a stale file is replaced, a live listener's and a plain file are not", async () => {
  const dir = await tempDir();
  const path = `${dir}/app.sock`;
  await leaveStaleSocket(path);
  await assert.rejects(nodeConnectUnix(path), { code: "ECONNREFUSED" });
  const listener = await nodeListenUnix(path);
  const { ino } = await Deno.lstat(path);
  const accepting = listener.accept();
  await assert.rejects(nodeListenUnix(path), { code: "EADDRINUSE", message: /a live listener/ });
  await (await accepting).close();
  assert.equal((await Deno.lstat(path)).ino, ino);
  const [a, b] = await connectPair(listener, () => nodeConnectUnix(path));
  await echoOnce(a, b);
  await listener.close();
  await Deno.writeTextFile(`${dir}/data`, "keep me");
  await assert.rejects(nodeListenUnix(`${dir}/data`), { code: "EEXIST", message: /not a socket/ });
  assert.equal(await Deno.readTextFile(`${dir}/data`), "keep me");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("node:net unix: of 20 concurrent listens on one path exactly one wins", async () => {
  const dir = await tempDir();
  const path = `${dir}/app.sock`;
  const results = await Promise.allSettled(Array.from({ length: 20 }, () => nodeListenUnix(path)));
  const won = results.flatMap((r) => r.status === "fulfilled" ? [r.value] : []);
  const lost = results.flatMap((r) => r.status === "rejected" ? [r.reason] : []);
  assert.equal(won.length, 1, `${won.length} listeners won`);
  for (const error of lost) assert.equal(error.code, "EADDRINUSE", String(error));
  for (const _ of lost) await (await won[0].accept()).close();
  const [a, b] = await connectPair(won[0], () => nodeConnectUnix(path));
  await echoOnce(a, b);
  await won[0].close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("node:net sockets talk to Deno's: both ways, Unix and TCP", async () => {
  const dir = await tempDir();
  const pairs: Array<[Listener, () => Promise<Transport>]> = [
    [await listenUnix(`${dir}/deno.sock`), () => nodeConnectUnix(`${dir}/deno.sock`)],
    [await nodeListenUnix(`${dir}/node.sock`), () => connectUnix(`${dir}/node.sock`)],
  ];
  const denoTcp = await listenTcp();
  pairs.push([denoTcp, () => nodeConnectTcp("127.0.0.1", (denoTcp.addr as Deno.NetAddr).port)]);
  const nodeTcp = await nodeListenTcp("127.0.0.1", 0);
  pairs.push([nodeTcp, () => connectTcp({ port: (nodeTcp.addr as Deno.NetAddr).port })]);
  for (const [listener, connect] of pairs) {
    const [server, client] = await connectPair(listener, connect);
    await echoOnce(client, server);
    await listener.close();
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("node:net: a closed listener ends its iteration and refuses accept()", async () => {
  const listener = await nodeListenTcp("127.0.0.1", 0);
  const serving = Array.fromAsync(listener);
  await listener.close();
  assert.deepEqual(await serving, []);
  await assert.rejects(listener.accept(), { name: "TransportClosedError" });
});
