// Plain node:tls, no conduit: what a TLS server socket reports when its client closes right
// after `secureConnect` (clean, a FIN), and when it resets (an RST). Run it with each runtime:
//
//   node runtimes/_testdata/tls_hang_up.ts
//   bun runtimes/_testdata/tls_hang_up.ts
//
// Node: "close: end", "reset: error read ECONNRESET (syscall read)".
// Bun:  "close: error socket hang up (syscall none)", "reset: error read ECONNRESET (syscall read)".
// Bun's client sends no Finished before it closes (strace: its last write is the ClientHello;
// then the server reads 0 bytes, a FIN), and Bun's server fails the socket with node:tls's
// "socket hang up", which Node keeps for a connection that ended without error before the
// handshake did. transports/_node_tls.ts reads that error as the end.

import * as net from "node:net";
import * as tls from "node:tls";
import { readFileSync } from "node:fs";

const dir = new URL("../../testdata/tls/", import.meta.url);
const cert = readFileSync(new URL("server.pem", dir), "utf8");
const key = readFileSync(new URL("server.key", dir), "utf8");
const ca = readFileSync(new URL("ca.pem", dir), "utf8");
const secureContext = tls.createSecureContext({ cert, key });

for (const how of ["close", "reset"]) {
  const seen = Promise.withResolvers<string>();
  const server = net.createServer({ allowHalfOpen: true }, (raw) => {
    const socket = new tls.TLSSocket(raw, { isServer: true, secureContext });
    socket.on("data", () => {});
    socket.on("end", () => seen.resolve("end"));
    socket.on(
      "error",
      (error: Error & { syscall?: string }) =>
        seen.resolve(`error ${error.message} (syscall ${error.syscall ?? "none"})`),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  const tcp = net.connect({ host: "127.0.0.1", port });
  await new Promise((resolve) => tcp.once("connect", resolve));
  const client = tls.connect({ socket: tcp, ca });
  client.on("error", () => {});
  client.once("secureConnect", () => how === "close" ? client.destroy() : tcp.resetAndDestroy());
  console.log(`${how}: ${await seen.promise}`);
  server.close();
  server.unref();
}
