// Transport round trips: a 64-byte ping answered by an echo in another process.
//
//   deno bench -A bench/transports_bench.ts
//
// Group "ping-pong 64B": the echo peer is a child process using bare Deno I/O, so the cases
// differ only in the side being measured: conduit's Transport over a Unix socket, TCP, TLS
// and a child's stdio, against the baseline of the same Unix socket driven with bare
// conn.write/conn.read. The in-memory pair (echoed in-process) shows the cost of the
// transport's streams alone.
//
// Group "stdio child ping-pong 64B": the child's side matters too, so here the parent side is
// always conduit's and the child echoes through conduit's stdioTransport, with its default
// synchronous small writes and with every write asynchronous (syncWriteMaxBytes: 0), against
// a bare child (Deno.stdin.read + Deno.stdout.writeSync) as the baseline.
//
// Every fixture (children, sockets) is set up at load time, outside the timed functions.

import { memoryPair } from "../transports/memory.ts";
import { spawnTransport } from "../transports/stdio.ts";
import { listenTcp, listenTls } from "../transports/tcp.ts";
import type { Listener, Transport } from "../transports/types.ts";
import { listenUnix } from "../transports/unix.ts";

const TLS_DIR = new URL("../testdata/tls/", import.meta.url);
const STDIO = new URL("../transports/stdio.ts", import.meta.url).href;
const BARE_ECHO = `
  const buffer = new Uint8Array(65536);
  for (;;) {
    const n = await conn.read(buffer);
    if (n === null) break;
    for (let off = 0; off < n;) off += await conn.write(buffer.subarray(off, n));
  }`;

const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
const children: Deno.ChildProcess[] = [];
globalThis.addEventListener("unload", () => {
  for (const child of children) {
    try {
      child.kill("SIGKILL");
    } catch {
      // Exited already.
    }
  }
  Deno.removeSync(dir, { recursive: true });
});

const ping = new Uint8Array(64).fill(1);

// The baseline: a bare Unix socket, bare on both sides.
const bareListener = Deno.listen({ transport: "unix", path: `${dir}/bare` });
spawnEcho(`const conn = await Deno.connect({ transport: "unix", path: "${dir}/bare" });`);
const bareConn = await bareListener.accept();
const bareBuffer = new Uint8Array(65536);

const [memory, memoryEcho] = memoryPair();
void memoryEcho.readable.pipeTo(memoryEcho.writable);

const unix = await acceptEcho(
  await listenUnix(`${dir}/conduit`),
  () => `const conn = await Deno.connect({ transport: "unix", path: "${dir}/conduit" });`,
);
const tcp = await acceptEcho(
  await listenTcp(),
  (port) => `const conn = await Deno.connect({ port: ${port} });`,
);
const ca = await Deno.readTextFile(new URL("ca.pem", TLS_DIR));
const tls = await acceptEcho(
  await listenTls({
    cert: await Deno.readTextFile(new URL("server.pem", TLS_DIR)),
    key: await Deno.readTextFile(new URL("server.key", TLS_DIR)),
  }),
  (port) =>
    `const conn = await Deno.connectTls({ port: ${port}, caCerts: [${JSON.stringify(ca)}] });`,
);
const bareChild = childEcho(`
  const buffer = new Uint8Array(65536);
  for (;;) {
    const n = await Deno.stdin.read(buffer);
    if (n === null) break;
    for (let off = 0; off < n;) off += Deno.stdout.writeSync(buffer.subarray(off, n));
  }`);
const conduitChild = childEcho(`
  import { stdioTransport } from "${STDIO}";
  const t = stdioTransport();
  await t.readable.pipeTo(t.writable);`);
const asyncChild = childEcho(`
  import { stdioTransport } from "${STDIO}";
  const t = stdioTransport({ syncWriteMaxBytes: 0 });
  await t.readable.pipeTo(t.writable);`);

const bareChildPing = pinger(bareChild);

const bench = (group: string, name: string, fn: () => Promise<void>, baseline = false) =>
  Deno.bench({ name: `transport/${name} ping-pong 64B`, group, baseline, fn });
const group = "ping-pong 64B";
bench(group, "bare-deno-unix", async () => {
  await bareConn.write(ping);
  for (let got = 0; got < 64;) got += (await bareConn.read(bareBuffer))!;
}, true);
bench(group, "memory", pinger(memory));
bench(group, "unix", pinger(unix));
bench(group, "tcp", pinger(tcp));
bench(group, "tls", pinger(tls));
bench(group, "stdio", bareChildPing);

const stdioGroup = "stdio child ping-pong 64B";
bench(stdioGroup, "stdio bare-child", bareChildPing, true);
bench(stdioGroup, "stdio conduit-child", pinger(conduitChild));
bench(stdioGroup, "stdio conduit-child-async-writes", pinger(asyncChild));

/** One round trip per call: write the ping, read until the 64 bytes are back. */
function pinger(transport: Transport): () => Promise<void> {
  const writer = transport.writable.getWriter();
  const reader = transport.readable.getReader();
  return async () => {
    await writer.write(ping);
    for (let got = 0; got < 64;) got += (await reader.read()).value!.length;
  };
}

function spawnEcho(connect: string): void {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", connect + BARE_ECHO],
    stdin: "null",
    stdout: "null",
  }).spawn();
  children.push(child);
}

async function acceptEcho(
  listener: Listener,
  connect: (port: number) => string,
): Promise<Transport> {
  const accepted = listener.accept();
  spawnEcho(connect((listener.addr as Deno.NetAddr).port));
  return await accepted;
}

function childEcho(program: string): Transport {
  return spawnTransport(Deno.execPath(), { args: ["eval", program] });
}
