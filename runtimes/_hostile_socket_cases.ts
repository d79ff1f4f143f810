// Socket cases with a hostile or careless peer, for every runner (beside _socket_cases.ts): a
// peer that resets its connection before the listener accepts it, and a peer that says its last
// bytes and goes while this side still writes. Real sockets, the peer through `node:net`.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { TransportClosedError } from "../errors.ts";
import { connectionGone, within } from "../_runtime.ts";
import { connectTcp, connectTls, listenTcp, listenTls } from "../transports/tcp.ts";
import { listenUnix } from "../transports/unix.ts";
import type { Listener, Transport } from "../transports/types.ts";
import type { RuntimeCase } from "./_cases.ts";
import { testCertificates } from "./_socket_cases.ts";

/** The hostile-peer socket cases, in order. */
export const hostileSocketCases: RuntimeCase[] = [];

function add(name: string, fn: () => void | Promise<void>): void {
  hostileSocketCases.push({ name, fn });
}

/** What `within` gives a step that did not settle in time. */
const LATE = Symbol("late");

/** Fails the case, naming `what`, unless `promise` settles within 5 s. */
async function settles<T>(promise: Promise<T>, what: string): Promise<T> {
  const result = await within(promise, 5_000, LATE);
  if (result === LATE) assert.fail(`${what} did not settle within 5 s`);
  return result as T;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Everything `transport` reads, as text, or "failed" once a read fails with TransportClosedError. */
async function readText(transport: Transport): Promise<string> {
  let text = "";
  const decoder = new TextDecoder();
  try {
    for await (const chunk of transport.readable) text += decoder.decode(chunk, { stream: true });
  } catch (error) {
    assert.ok(error instanceof TransportClosedError, String(error));
    return "failed";
  }
  return text + decoder.decode();
}

/** A raw `node:net` connection, once connected; its errors are the case's to look at. */
async function rawConnect(options: net.NetConnectOpts): Promise<net.Socket> {
  const socket = net.connect(options);
  socket.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return socket;
}

// ---------------------------------------------------------------- reset before accept()

/**
 * Connects to `port`, sends a few bytes and resets, while nobody accepts: the listener's
 * runtime sees the reset on a connection that waits for accept().
 */
async function resetBeforeAccept(port: number): Promise<void> {
  const dead = await rawConnect({ host: "127.0.0.1", port });
  dead.write("dead");
  await delay(50);
  dead.resetAndDestroy();
  await delay(200);
}

for (const kind of ["tcp", "tls"] as const) {
  add(
    `hostile ${kind}: a connection reset before accept() crashes nothing; accept() goes on to the next`,
    async () => {
      let listener: Listener;
      let connect: (port: number) => Promise<Transport>;
      if (kind === "tcp") {
        listener = await listenTcp({ hostname: "127.0.0.1", port: 0 });
        connect = (port) => connectTcp({ hostname: "127.0.0.1", port });
      } else {
        const { cert, key, ca } = await testCertificates();
        listener = await listenTls({ hostname: "127.0.0.1", cert, key });
        connect = (port) => connectTls({ hostname: "127.0.0.1", port, caCerts: [ca] });
      }
      const port = (listener.addr as Deno.NetAddr).port;
      try {
        // On Node the reset connection's 'error' had no listener, and it ended the process.
        await resetBeforeAccept(port);
        // Not awaited yet: a TLS server does its handshake once accept() returned it.
        const connecting = connect(port).then(async (live) => {
          const writer = live.writable.getWriter();
          await writer.write(new TextEncoder().encode("live"));
          await writer.close();
          return live;
        });
        connecting.catch(() => {});
        try {
          // accept() either skips the dead connection, fails for it with a connection-gone
          // error (Deno: NotConnected), or hands it out with reads that settle.
          for (let tries = 0;; tries++) {
            assert.ok(tries < 3, "accept() never handed out the live connection");
            let transport: Transport;
            try {
              transport = await settles(listener.accept(), "accept()");
            } catch (error) {
              assert.ok(connectionGone(error), `accept() failed with ${error}`);
              continue;
            }
            let text: string;
            try {
              text = await settles(readText(transport), "reading an accepted connection");
            } finally {
              await settles(transport.close(), "closing an accepted connection");
            }
            if (text === "live") break;
          }
        } finally {
          await (await settles(connecting, "connecting after the reset")).close();
        }
      } finally {
        await settles(listener.close(), "listener.close()");
      }
    },
  );
}

// ---------------------------------------------------------------- EPIPE after the peer's end

for (const kind of ["tcp", "unix"] as const) {
  add(
    `hostile ${kind}: a peer that sends its last bytes and closes: a write fails, the reads still end cleanly`,
    async () => {
      const dir = kind === "unix" ? await mkdtemp(`${tmpdir()}/cdh`) : undefined;
      const listener = kind === "tcp"
        ? await listenTcp({ hostname: "127.0.0.1", port: 0 })
        : await listenUnix(`${dir}/s`);
      try {
        const accepted = listener.accept();
        const peer = await rawConnect(
          kind === "tcp"
            ? { host: "127.0.0.1", port: (listener.addr as Deno.NetAddr).port }
            : { path: `${dir}/s` },
        );
        const transport = await settles(accepted, "accept()");
        try {
          // The peer says goodbye and is gone before this side has read a byte.
          const gone = new Promise((resolve) => peer.once("close", resolve));
          peer.end("bye");
          peer.destroy();
          await gone;
          await delay(100);
          // This side writes on, until the OS refuses (EPIPE, or a reset on TCP).
          await assert.rejects(
            settles(
              (async () => {
                const writer = transport.writable.getWriter();
                try {
                  for (let i = 0; i < 1000; i++) {
                    await writer.write(new Uint8Array(1 << 16));
                    await delay(1);
                  }
                } finally {
                  writer.releaseLock();
                }
              })(),
              "writing to a peer that is gone",
            ),
            TransportClosedError,
          );
          // What the peer sent before it closed is still read, and then its clean end: the
          // write's failure is no failure of the reads (as on Deno).
          assert.equal(await settles(readText(transport), "reading"), "bye");
        } finally {
          await settles(transport.close(), "close()");
        }
      } finally {
        await listener.close();
        if (dir !== undefined) await rm(dir, { recursive: true, force: true });
      }
    },
  );
}

// ---------------------------------------------------------------- the accept loop goes on

add(
  "hostile tcp: a connection reset before it is accepted does not end a for-await accept loop",
  async () => {
    const listener = await listenTcp({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    try {
      await resetBeforeAccept(port);
      const live = await connectTcp({ hostname: "127.0.0.1", port });
      const writer = live.writable.getWriter();
      await writer.write(new TextEncoder().encode("live"));
      await writer.close();
      // The loop a server writes: a connection that failed before it was accepted is not the
      // listener's failure, and the loop reaches the live one.
      const heard: string[] = [];
      await settles(
        (async () => {
          for await (const transport of listener) {
            try {
              heard.push(await settles(readText(transport), "reading an accepted connection"));
            } finally {
              await transport.close();
            }
            if (heard.includes("live")) return;
          }
        })(),
        "the accept loop",
      );
      assert.ok(heard.includes("live"), JSON.stringify(heard));
      await live.close();
    } finally {
      await settles(listener.close(), "listener.close()");
    }
  },
);
