// Deno 2.9: a TlsConn closed while its handshake waits on a server that never answers cancels the
// handshake, but its TCP socket stays open until the server ends it; node:tls's destroy()
// closes it. Prints what the server's end sees within 2 s.
//   deno run -A runtimes/_testdata/tls_close_in_handshake.ts
const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
const accepting = listener.accept();
const tcp = await Deno.connect({
  hostname: "127.0.0.1",
  port: (listener.addr as Deno.NetAddr).port,
});
const server = await accepting;
const tls = await Deno.startTls(tcp, { hostname: "127.0.0.1" });
setTimeout(() => tls.close(), 100);
console.log("handshake:", await tls.handshake().then(() => "done", (error) => error.message));
const seen = (async () => {
  const buffer = new Uint8Array(4096);
  for (;;) if ((await server.read(buffer)) === null) return "the client's end";
})();
const outcome = await Promise.race([
  seen,
  new Promise((resolve) => setTimeout(resolve, 2000, "the socket still open after 2 s")),
]);
console.log("server sees:", outcome);
server.close();
listener.close();
Deno.exit(0);
