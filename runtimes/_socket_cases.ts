// The socket cases, registered by each runner beside _cases.ts: Unix sockets, TCP and TLS with a
// channel over them and serve() with auth, TLS's failures named, and the transport conformance
// suite over each (through node:net and node:tls off Deno).

import assert from "node:assert/strict";
import { AuthenticationError, openChannel, serve } from "../channel/mod.ts";
import { connectUnix, listenUnix } from "../transports/unix.ts";
import { connectTcp, connectTls, listenTcp, listenTls } from "../transports/tcp.ts";
import type { Listener, Transport } from "../transports/types.ts";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import * as net from "node:net";
import * as tls from "node:tls";
import { TransportClosedError } from "../errors.ts";
import { tmpdir } from "node:os";
import { runtimeName } from "../_runtime.ts";
import {
  conformanceCases,
  type ConformanceTarget,
  denoTlsClientCode,
  stuckSocketPeer,
} from "../transports/_conformance.ts";

import { range, type RuntimeCase, type ServerApi } from "./_cases.ts";

/** The socket cases every runner registers, in order. */
export const socketCases: RuntimeCase[] = [];

function add(name: string, fn: () => void | Promise<void>): void {
  socketCases.push({ name, fn });
}

// ---------------------------------------------------------------- sockets

/** Runs `body` with a fresh temporary directory, removed afterwards. */
async function withTempDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(`${tmpdir()}/cd`);
  try {
    await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A channel's calls and streams over a connection `listener` accepted from `connect`, then
 * both channels closed. The listener stays the caller's.
 */
async function channelOver(
  listener: Listener,
  connect: () => Promise<Transport>,
): Promise<void> {
  const accepted = listener.accept();
  const [server, client] = await Promise.all([
    accepted.then((transport) =>
      openChannel(transport, {
        handlers: {
          add: ({ a, b }: { a: number; b: number }) => a + b,
          async *count(to: number) {
            for (let i = 1; i <= to; i++) yield i;
          },
        },
      })
    ),
    connect().then((transport) => openChannel<ServerApi>(transport)),
  ]);
  try {
    assert.equal(await client.remote.add({ a: 40, b: 2 }), 42);
    assert.deepEqual(await Array.fromAsync(client.remote.count(1000)), range(1, 1000));
    const big = "x".repeat(1 << 20);
    assert.equal(await client.remote.add({ a: big.length, b: 0 }), 1 << 20);
  } finally {
    await Promise.all([client.close(), server.close()]);
  }
}

/**
 * `serve()` on `listener` with a secret: a client with it calls, one with a wrong secret is
 * refused with AuthenticationError. Closes the server, and so the listener.
 */
async function serveWithAuth(
  listener: Listener,
  connect: () => Promise<Transport>,
): Promise<void> {
  const secret = "correct horse battery staple";
  const server = serve(listener, {
    auth: { secret },
    handlers: { add: ({ a, b }: { a: number; b: number }) => a + b },
  });
  try {
    const client = await openChannel<ServerApi>(await connect(), { auth: { secret } });
    try {
      assert.equal(await client.remote.add({ a: 20, b: 22 }), 42);
    } finally {
      await client.close();
    }
    await assert.rejects(
      openChannel<ServerApi>(await connect(), { auth: { secret: "wrong horse battery staple" } }),
      AuthenticationError,
    );
  } finally {
    await server.close();
  }
}

add("unix socket: a channel's calls and streams, through listenUnix and connectUnix", async () => {
  await withTempDir(async (dir) => {
    const listener = await listenUnix(`${dir}/s`);
    try {
      await channelOver(listener, () => connectUnix(`${dir}/s`));
    } finally {
      await listener.close();
    }
  });
});

add("serve() over a Unix socket with auth: the secret opens, a wrong one is refused", async () => {
  await withTempDir(async (dir) => {
    await serveWithAuth(await listenUnix(`${dir}/s`), () => connectUnix(`${dir}/s`));
  });
});

add(
  "tcp: serve() over listenTcp with auth; connectTcp clients, a wrong secret refused",
  async () => {
    const listener = await listenTcp({ port: 0 });
    const port = (listener.addr as { port: number }).port;
    await serveWithAuth(listener, () => connectTcp({ port }));
  },
);

// ---------------------------------------------------------------- TLS

/** The test-only certificates of testdata/tls (never trust that CA for anything else). */
export async function testCertificates(): Promise<{ cert: string; key: string; ca: string }> {
  const read = (name: string) =>
    readFile(new URL(`../testdata/tls/${name}`, import.meta.url), "utf8");
  return {
    cert: await read("server.pem"),
    key: await read("server.key"),
    ca: await read("ca.pem"),
  };
}

add("tls: a channel's calls and streams, through listenTls and connectTls", async () => {
  const { cert, key, ca } = await testCertificates();
  const listener = await listenTls({ cert, key });
  assert.equal(listener.encryption, "tls");
  try {
    const port = (listener.addr as { port: number }).port;
    await channelOver(listener, () => connectTls({ port, caCerts: [ca] }));
  } finally {
    await listener.close();
  }
});

add(
  "tls: serve() over listenTls with auth; connectTls clients, a wrong secret refused",
  async () => {
    const { cert, key, ca } = await testCertificates();
    const listener = await listenTls({ cert, key });
    const port = (listener.addr as { port: number }).port;
    await serveWithAuth(
      listener,
      () => connectTls({ port, caCerts: [ca], serverName: "localhost" }),
    );
  },
);

add("tls: 16 MiB and the end after it, while the reader lags", async () => {
  const { cert, key, ca } = await testCertificates();
  const listener = await listenTls({ cert, key });
  try {
    const accepted = listener.accept();
    const client = await connectTls({
      port: (listener.addr as { port: number }).port,
      caCerts: [ca],
    });
    const server = await accepted;
    try {
      const size = 16 << 20;
      const writer = server.writable.getWriter();
      const writing = (async () => {
        for (let at = 0; at < size; at += 1 << 16) {
          await writer.write(new Uint8Array(1 << 16).fill(at >> 16));
        }
        await writer.close();
      })();
      let read = 0;
      for await (const chunk of client.readable) {
        assert.equal(chunk[0], (read >> 16) & 0xff, `the chunk at ${read}`);
        read += chunk.length;
        // A slow reader: the socket's read ahead fills, pauses it and resumes it.
        if (read % (1 << 20) < chunk.length) await new Promise((resolve) => setTimeout(resolve, 5));
      }
      assert.equal(read, size);
      await writing;
    } finally {
      await Promise.all([client.close(), server.close()]);
    }
  } finally {
    await listener.close();
  }
});

add(
  "tls: connectTls to a server that never answers gives up after its handshakeTimeout, or its signal",
  async () => {
    // A plain TCP listener: it accepts and never sends a byte of TLS.
    const listener = await listenTcp({ port: 0 });
    const port = (listener.addr as { port: number }).port;
    const accepted: Transport[] = [];
    const serving = (async () => {
      for await (const transport of listener) accepted.push(transport);
    })();
    try {
      const started = performance.now();
      await assert.rejects(
        connectTls({ port, handshakeTimeout: 150 }),
        (error: Error) => {
          assert.equal(error.name, "TimeoutError", String(error));
          assert.match(
            error.message,
            /^connectTls to 127\.0\.0\.1:\d+: .*within handshakeTimeout \(150 ms\)/,
          );
          return true;
        },
      );
      assert.ok(performance.now() - started < 5_000);
      const stop = new AbortController();
      const reason = new Error("gave up");
      const connecting = connectTls({ port, signal: stop.signal });
      setTimeout(() => stop.abort(reason), 50);
      await assert.rejects(connecting, (error) => error === reason);
      // An aborted signal refuses at once.
      await assert.rejects(connectTls({ port, signal: stop.signal }), (error) => error === reason);
      await assert.rejects(connectTcp({ port, signal: stop.signal }), (error) => error === reason);
      while (accepted.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
      // The client closed each socket it gave up on: the server's ends see it. Not on Deno
      // 2.9: a TlsConn closed in its handshake cancels it but keeps its TCP socket open until
      // the server ends it (runtimes/_testdata/tls_close_in_handshake.ts shows it).
      if (runtimeName() === "deno") {
        for (const transport of accepted) await transport.close();
        return;
      }
      for (const transport of accepted) {
        const reader = transport.readable.getReader();
        for (;;) {
          const { done } = await reader.read().catch(() => ({ done: true }));
          if (done) break;
        }
        await transport.close();
      }
    } finally {
      await listener.close();
      await serving;
    }
  },
);

add("tls: an untrusted server or a wrong name fails connectTls, naming what failed", async () => {
  const { cert, key, ca } = await testCertificates();
  const listener = await listenTls({ cert, key });
  const port = (listener.addr as { port: number }).port;
  // The server's side of each refused handshake ends or fails; either way it is closed.
  const serving = (async () => {
    for await (const transport of listener) {
      void Array.fromAsync(transport.readable).catch(() => {}).finally(() => transport.close());
    }
  })();
  try {
    // Deno throws Deno.errors.InvalidData; Node and Bun an Error with Node's code.
    await assert.rejects(connectTls({ port }), (error: Error & { code?: string }) => {
      if (error.name === "InvalidData") return true;
      assert.equal(error.code, "UNABLE_TO_VERIFY_LEAF_SIGNATURE", String(error));
      assert.match(
        error.message,
        /^connectTls to 127\.0\.0\.1:\d+: the server's certificate is not trusted/,
      );
      return true;
    });
    await assert.rejects(
      connectTls({ port, caCerts: [ca], serverName: "example.com" }),
      (error: Error & { code?: string }) => {
        if (error.name === "InvalidData") return true;
        assert.equal(error.code, "ERR_TLS_CERT_ALTNAME_INVALID", String(error));
        assert.match(error.message, /does not name "example\.com".*serverName/);
        return true;
      },
    );
  } finally {
    await listener.close();
    await serving;
  }
});

add(
  "tls: a client closing right after connectTls ends the server's readable; a reset fails it",
  async () => {
    // Bun's client closing at once leaves the server mid-handshake (its Finished unsent), and
    // Bun's node:tls fails the server's socket then, as for a reset (_testdata/tls_hang_up.ts).
    const { cert, key, ca } = await testCertificates();
    const listener = await listenTls({ cert, key });
    const port = (listener.addr as { port: number }).port;
    try {
      for (const how of ["close", "reset"] as const) {
        const accepted = listener.accept();
        if (how === "close") {
          await (await connectTls({ port, caCerts: [ca] })).close();
        } else {
          const tcp = net.connect({ host: "127.0.0.1", port });
          await new Promise((resolve) => tcp.once("connect", resolve));
          const client = tls.connect({ socket: tcp, ca: [ca] });
          client.on("error", () => {});
          await new Promise((resolve) => client.once("secureConnect", resolve));
          tcp.resetAndDestroy();
        }
        const server = await accepted;
        try {
          const reader = server.readable.getReader();
          if (how === "close") assert.equal((await reader.read()).done, true, how);
          else await assert.rejects(reader.read(), TransportClosedError, how);
        } finally {
          await server.close();
        }
      }
    } finally {
      await listener.close();
    }
  },
);

// ---------------------------------------------------------------- transport conformance

/**
 * The peer of a socket case that connects (`connect`: an expression that does, with `node:net`
 * as `net` and `node:tls` as `tls`) and then never reads.
 */
function stuckNetPeer(listener: Listener, connect: string, cleanup?: () => Promise<void>) {
  return stuckSocketPeer(
    listener,
    `Promise.all([import("node:net"), import("node:tls")]).then(([net, tls]) => { ${connect}; })`,
    cleanup,
  );
}

async function connectedPair(listener: Listener, connect: () => Promise<Transport>) {
  const accepted = listener.accept();
  const a = await connect();
  const b = await accepted;
  await listener.close();
  return { a, b };
}

const conformanceTargets: ConformanceTarget[] = [
  {
    name: "unix",
    async pair() {
      const dir = await mkdtemp(`${tmpdir()}/cdc`);
      const { a, b } = await connectedPair(
        await listenUnix(`${dir}/s`),
        () => connectUnix(`${dir}/s`),
      );
      return { a, b, cleanup: () => rm(dir, { recursive: true, force: true }) };
    },
    async stuckPeer() {
      const dir = await mkdtemp(`${tmpdir()}/cdc`);
      return await stuckNetPeer(
        await listenUnix(`${dir}/s`),
        `net.connect(${JSON.stringify(`${dir}/s`)})`,
        () => rm(dir, { recursive: true, force: true }),
      );
    },
    abortSeenByPeer: "end",
  },
  {
    name: "tcp",
    async pair() {
      const listener = await listenTcp({ hostname: "127.0.0.1", port: 0 });
      const port = (listener.addr as { port: number }).port;
      return await connectedPair(listener, () => connectTcp({ hostname: "127.0.0.1", port }));
    },
    async stuckPeer() {
      const listener = await listenTcp({ hostname: "127.0.0.1", port: 0 });
      const port = (listener.addr as { port: number }).port;
      return await stuckNetPeer(listener, `net.connect(${port}, "127.0.0.1")`);
    },
    abortSeenByPeer: "end",
  },
  {
    name: "tls",
    async pair() {
      const { cert, key, ca } = await testCertificates();
      const listener = await listenTls({ cert, key });
      const port = (listener.addr as { port: number }).port;
      return await connectedPair(listener, () => connectTls({ port, caCerts: [ca] }));
    },
    async stuckPeer() {
      const { cert, key, ca } = await testCertificates();
      const listener = await listenTls({ cert, key });
      const port = (listener.addr as { port: number }).port;
      // A peer done with its handshake, so that records, not the handshake, stop. Deno's
      // node:tls reads ahead without bound: there the peer is Deno's own TLS.
      const connect = runtimeName() === "deno"
        ? denoTlsClientCode(port, ca)
        : `tls.connect(${JSON.stringify({ host: "127.0.0.1", port, ca })})`;
      return await stuckNetPeer(listener, connect);
    },
    abortSeenByPeer: "end",
  },
];

for (const target of conformanceTargets) {
  for (const { name, fn } of conformanceCases(target)) add(`conformance ${name}`, fn);
}
