// One-way throughput of every transport, unframed and framed, in one run:
//
//   deno run -A bench/transport_throughput.ts [--runs 3] [--json]
//
// For each transport a sender streams data to a receiver that counts it; the figure is bytes
// (or frames) over the time from the receiver's "go" to the end of the stream. The sender is
// a separate process (this script, re-run with --peer) for every OS transport, so both ends
// have a core, as in real use; the memory pair runs in one process. Columns:
// - "bare Deno": the same OS object driven directly (conn.read/conn.write, child.stdout with a
//   BYOB reader and Deno.stdout.write), 1 MiB writes: the ceiling conduit works under.
// - "raw": conduit's Transport, unframed, 1 MiB writes.
// - "1 MiB frames": FrameWriter on the sender, a FrameDecoder loop on the receiver.
// - "64 B frames": the same with 64-byte payloads, in frames per second.
// stdio runs child to parent (the child's stdout is conduit's child-side writable), twice:
// with the default synchronous small writes and with every write asynchronous.
// Each cell is the median of --runs runs; MB = 10^6 bytes.

import { FrameDecoder, FrameWriter } from "../framing/mod.ts";
import { memoryPair } from "../transports/memory.ts";
import { spawnTransport, stdioTransport } from "../transports/stdio.ts";
import { connectTcp, connectTls, listenTcp, listenTls } from "../transports/tcp.ts";
import type { Listener, Transport } from "../transports/types.ts";
import { connectUnix, listenUnix } from "../transports/unix.ts";

type Kind = "memory" | "unix" | "tcp" | "tls" | "stdio" | "stdio-async";
type Case = "bare" | "raw" | "frames1m" | "frames64";

const MIB = 1024 * 1024;
/** Bytes per unframed or 1 MiB-frame run. */
const BULK_BYTES = 512 * MIB;
/** Frames per 64 B run. */
const SMALL_FRAMES = 2_000_000;
const TLS_DIR = new URL("../testdata/tls/", import.meta.url);
const SELF = new URL(import.meta.url).pathname;

interface Result {
  bytes: number;
  frames: number;
  seconds: number;
}

if (Deno.args[0] === "--peer") {
  await runPeer(Deno.args[1] as Kind, Deno.args[2], Deno.args[3] as Case);
} else {
  await main();
}

async function main(): Promise<void> {
  const runs = Number(flag("--runs") ?? 3);
  const kinds: Kind[] = ["memory", "unix", "tcp", "tls", "stdio", "stdio-async"];
  const cases: Case[] = ["bare", "raw", "frames1m", "frames64"];
  const table: Record<string, Record<string, number | null>> = {};
  for (const kind of kinds) {
    table[kind] = {};
    for (const kase of cases) {
      if (kind === "memory" && kase === "bare") {
        table[kind][kase] = null;
        continue;
      }
      if (kind === "stdio-async" && kase === "bare") {
        table[kind][kase] = null;
        continue;
      }
      const figures: number[] = [];
      for (let run = 0; run < runs; run++) {
        const result = await measure(kind, kase);
        figures.push(
          kase === "frames64"
            ? result.frames / result.seconds
            : result.bytes / result.seconds / 1e6,
        );
      }
      figures.sort((x, y) => x - y);
      table[kind][kase] = figures[Math.floor(figures.length / 2)];
      console.error(`${kind} ${kase}: ${figures.map((f) => f.toFixed(0)).join(", ")}`);
    }
  }
  if (Deno.args.includes("--json")) {
    console.log(JSON.stringify(table, null, 2));
    return;
  }
  const cell = (value: number | null | undefined, unit: string) =>
    value == null
      ? "–"
      : unit === "frames"
      ? `${(value / 1e6).toFixed(2)}M/s`
      : `${value.toFixed(0)}`;
  console.log(
    `Deno ${Deno.version.deno}, ${navigator.hardwareConcurrency} cores, median of ${runs} runs`,
  );
  console.log("");
  console.log("| transport | bare Deno MB/s | raw MB/s | 1 MiB frames MB/s | 64 B frames/s |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  for (const kind of kinds) {
    const row = table[kind];
    console.log(
      `| ${kind} | ${cell(row.bare, "MB")} | ${cell(row.raw, "MB")} | ${
        cell(row.frames1m, "MB")
      } | ${cell(row.frames64, "frames")} |`,
    );
  }
}

/** Runs one sender/receiver pair and returns what the receiver counted. */
async function measure(kind: Kind, kase: Case): Promise<Result> {
  if (kind === "memory") {
    const [a, b] = memoryPair();
    const sending = send(a, kase);
    const result = await receive(b, kase);
    await sending;
    await Promise.all([a.close(), b.close()]);
    return result;
  }
  if (kind === "stdio" || kind === "stdio-async") {
    if (kase === "bare") return await measureBareStdio();
    const child = spawnTransport(Deno.execPath(), {
      args: ["run", "-A", SELF, "--peer", kind, "-", kase],
    });
    const result = await receive(child, kase);
    await child.close();
    return result;
  }
  const dir = kind === "unix" ? await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" }) : "";
  try {
    if (kase === "bare") return await measureBareSocket(kind, dir);
    const listener = await listen(kind, dir);
    const address = kind === "unix" ? `${dir}/s` : String((listener.addr as Deno.NetAddr).port);
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", SELF, "--peer", kind, address, kase],
    })
      .spawn();
    const accepted = await listener[Symbol.asyncIterator]().next();
    const transport = accepted.value!;
    const result = await receive(transport, kase);
    await transport.close();
    await listener.close();
    await child.status;
    return result;
  } finally {
    if (dir) await Deno.remove(dir, { recursive: true });
  }
}

async function listen(kind: Kind, dir: string): Promise<Listener> {
  if (kind === "unix") return await listenUnix(`${dir}/s`);
  if (kind === "tcp") return listenTcp();
  return listenTls({
    cert: await Deno.readTextFile(new URL("server.pem", TLS_DIR)),
    key: await Deno.readTextFile(new URL("server.key", TLS_DIR)),
  });
}

async function connect(kind: Kind, address: string): Promise<Transport> {
  if (kind === "unix") return await connectUnix(address);
  if (kind === "tcp") return await connectTcp({ port: Number(address) });
  if (kind === "tls") {
    const ca = await Deno.readTextFile(new URL("ca.pem", TLS_DIR));
    return await connectTls({ port: Number(address), caCerts: [ca] });
  }
  return stdioTransport({ syncWriteMaxBytes: kind === "stdio-async" ? 0 : undefined });
}

/** Receives until the stream ends, after sending the one-byte "go". */
async function receive(transport: Transport, kase: Case): Promise<Result> {
  const writer = transport.writable.getWriter();
  const reader = transport.readable.getReader();
  const start = performance.now();
  await writer.write(new Uint8Array([1]));
  writer.releaseLock();
  let bytes = 0;
  let frames = 0;
  const decoder = kase === "raw" ? undefined : new FrameDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.length;
    if (decoder) {
      decoder.push(value);
      while (decoder.next() !== undefined) frames++;
    }
  }
  const seconds = (performance.now() - start) / 1000;
  decoder?.end();
  return { bytes, frames, seconds };
}

/** The sender: waits for "go", sends, closes. */
async function send(transport: Transport, kase: Case): Promise<void> {
  const reader = transport.readable.getReader();
  await reader.read();
  reader.releaseLock();
  if (kase === "raw") {
    const writer = transport.writable.getWriter();
    const chunk = new Uint8Array(MIB).fill(7);
    for (let sent = 0; sent < BULK_BYTES; sent += MIB) await writer.write(chunk);
    await writer.close();
  } else {
    const writer = new FrameWriter(transport.writable);
    const payload = new Uint8Array(kase === "frames1m" ? MIB : 64).fill(7);
    const count = kase === "frames1m" ? BULK_BYTES / MIB : SMALL_FRAMES;
    for (let i = 0; i < count; i++) {
      writer.write(payload);
      if (writer.desiredSize <= 0) await writer.ready;
    }
    await writer.close();
  }
  await transport.close();
}

async function runPeer(kind: Kind, address: string, kase: Case): Promise<void> {
  if (kase === "bare") {
    if (kind === "stdio") return await sendBareStdio();
    const conn = kind === "unix"
      ? await Deno.connect({ transport: "unix", path: address })
      : kind === "tcp"
      ? await Deno.connect({ port: Number(address) })
      : await Deno.connectTls({
        port: Number(address),
        caCerts: [await Deno.readTextFile(new URL("ca.pem", TLS_DIR))],
      });
    await conn.read(new Uint8Array(1));
    const chunk = new Uint8Array(MIB).fill(7);
    for (let sent = 0; sent < BULK_BYTES; sent += MIB) {
      for (let off = 0; off < MIB;) off += await conn.write(chunk.subarray(off));
    }
    conn.close();
    return;
  }
  await send(await connect(kind, address), kase);
}

async function measureBareSocket(kind: Kind, dir: string): Promise<Result> {
  const listener = kind === "unix"
    ? Deno.listen({ transport: "unix", path: `${dir}/s` })
    : kind === "tcp"
    ? Deno.listen({ hostname: "127.0.0.1", port: 0 })
    : Deno.listenTls({
      hostname: "127.0.0.1",
      port: 0,
      cert: await Deno.readTextFile(new URL("server.pem", TLS_DIR)),
      key: await Deno.readTextFile(new URL("server.key", TLS_DIR)),
    });
  const address = kind === "unix" ? `${dir}/s` : String((listener.addr as Deno.NetAddr).port);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SELF, "--peer", kind, address, "bare"],
  })
    .spawn();
  const conn = await listener.accept();
  const start = performance.now();
  await conn.write(new Uint8Array([1]));
  const buffer = new Uint8Array(256 * 1024);
  let bytes = 0;
  for (let n = await conn.read(buffer); n !== null; n = await conn.read(buffer)) bytes += n;
  const seconds = (performance.now() - start) / 1000;
  conn.close();
  listener.close();
  await child.status;
  return { bytes, frames: 0, seconds };
}

async function measureBareStdio(): Promise<Result> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SELF, "--peer", "stdio", "-", "bare"],
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const reader = child.stdout.getReader({ mode: "byob" });
  const writer = child.stdin.getWriter();
  const start = performance.now();
  await writer.write(new Uint8Array([1]));
  let buffer = new Uint8Array(256 * 1024);
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read(buffer);
    if (done) break;
    bytes += value.length;
    buffer = new Uint8Array(value.buffer);
  }
  const seconds = (performance.now() - start) / 1000;
  await writer.close();
  await child.status;
  return { bytes, frames: 0, seconds };
}

async function sendBareStdio(): Promise<void> {
  await Deno.stdin.read(new Uint8Array(1));
  const chunk = new Uint8Array(MIB).fill(7);
  for (let sent = 0; sent < BULK_BYTES; sent += MIB) {
    for (let off = 0; off < MIB;) off += await Deno.stdout.write(chunk.subarray(off));
  }
  Deno.stdout.close();
}

function flag(name: string): string | undefined {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : undefined;
}
