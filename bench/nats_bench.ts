// What NATS costs against direct TCP, in the same run with interleaved rounds: both channel
// ends in this process, a real nats-server in another.
//
//   deno run -A bench/nats_bench.ts [rounds=3] [streamMiB=256]
//
// NATS_CONF, if set, is the nats-server config (e.g. "max_payload: 262144").
//
// Per round and transport: small JSON call p50/p99 (awaited one at a time; for NATS also a
// plain nats.js request/reply of the same bytes, the floor under a call), calls/s with 256
// in flight, MB/s of the bare transport (1 MiB writes one way), MB/s of 1 MiB raw calls (one
// way), and a stream of 1 MiB items through a consumer slowed to ~250 MB/s with the process's
// peak RSS above its level before the stream (and the nats-server's). Prints one Markdown
// table of medians over the rounds.

import { jsonCodec } from "../codecs/json.ts";
import { rawCodec } from "../codecs/raw.ts";
import { type Channel, openChannel } from "../channel/mod.ts";
import { connectTcp, listenTcp } from "../transports/tcp.ts";
import { connectNats, listenNats } from "../transports/nats.ts";
import type { Transport } from "../transports/types.ts";
import { type NatsServer, startNatsServer } from "../transports/_test_nats_server.ts";

const ROUNDS = Number(Deno.args[0] ?? 3);
const STREAM_MIB = Number(Deno.args[1] ?? 256);
const LATENCY_CALLS = 5_000;
const MANY_CALLS = 50_000;
const BIG_CALLS = 64;
const RAW_MIB = 256;
const MIB = 1 << 20;
const SMALL = { id: 42, name: "conduit", tags: ["bench", "small", "call"] };

type Kind = "tcp" | "nats";

interface Api {
  echo(value: typeof SMALL): typeof SMALL;
}
interface RawApi {
  echo(value: Uint8Array): Uint8Array;
  chunks(count: number): AsyncIterable<Uint8Array>;
}

interface Figures {
  p50: number;
  p99: number;
  /** nats.js request/reply of the same JSON bytes, no conduit: the floor under a NATS call. */
  natsP50: number;
  natsP99: number;
  callsPerSecond: number;
  /** The transport alone, no channel: 1 MiB writes one way. */
  rawMBps: number;
  bigMBps: number;
  streamMBps: number;
  rssMiB: number;
  serverRssMiB: number;
}

async function transportPair(kind: Kind, nats: NatsServer): Promise<[Transport, Transport]> {
  if (kind === "tcp") {
    const listener = listenTcp({ port: 0 });
    const accepted = listener.accept();
    const client = await connectTcp({ port: (listener.addr as Deno.NetAddr).port });
    const server = await accepted;
    await listener.close();
    return [server, client];
  }
  const [serverNc, clientNc] = await Promise.all([nats.connect(), nats.connect()]);
  const listener = await listenNats(serverNc, "bench", { queue: "bench" });
  const accepted = listener.accept();
  const client = await connectNats(clientNc, "bench");
  const server = await accepted;
  await listener.close();
  return [server, client];
}

async function channels<T extends object>(
  kind: Kind,
  nats: NatsServer,
  raw: boolean,
): Promise<{ client: Channel<T>; close: () => Promise<void> }> {
  const [a, b] = await transportPair(kind, nats);
  const codec = raw ? rawCodec() : jsonCodec();
  const methodCodecs = raw ? { chunks: { param: jsonCodec(), result: rawCodec() } } : undefined;
  const item = new Uint8Array(MIB).fill(7);
  const [server, client] = await Promise.all([
    openChannel(a, {
      codec,
      methodCodecs,
      handlers: {
        echo: (value: unknown) => value,
        async *chunks(count: number) {
          for (let i = 0; i < count; i++) yield item;
        },
      },
    }),
    openChannel<T>(b, { codec, methodCodecs }),
  ]);
  return {
    client,
    close: async () => {
      await Promise.all([client.close(), server.close()]);
    },
  };
}

/** p50 and p99 in µs of `count` awaited runs of `op`, after a warm-up. */
async function latency(count: number, op: () => Promise<unknown>): Promise<[number, number]> {
  for (let i = 0; i < 500; i++) await op();
  const samples = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await op();
    samples[i] = performance.now() - start;
  }
  samples.sort();
  return [samples[Math.floor(count * 0.5)] * 1000, samples[Math.floor(count * 0.99)] * 1000];
}

/** Plain nats.js request/reply between two client connections, as a reference. */
async function natsFloor(nats: NatsServer): Promise<[number, number]> {
  const [serverNc, clientNc] = await Promise.all([nats.connect(), nats.connect()]);
  const sub = serverNc.subscribe("floor", {
    callback: (_error, msg) => {
      msg.respond(msg.data);
    },
  });
  await serverNc.flush();
  const payload = new TextEncoder().encode(JSON.stringify(SMALL));
  const figures = await latency(LATENCY_CALLS, () => clientNc.request("floor", payload));
  sub.unsubscribe();
  await Promise.all([serverNc.close(), clientNc.close()]);
  return figures;
}

/** MB/s of `RAW_MIB` MiB written in 1 MiB chunks through a bare transport pair. */
async function oneWay(kind: Kind, nats: NatsServer): Promise<number> {
  const [a, b] = await transportPair(kind, nats);
  const chunk = new Uint8Array(MIB).fill(5);
  const start = performance.now();
  const writing = (async () => {
    const writer = a.writable.getWriter();
    for (let i = 0; i < RAW_MIB; i++) await writer.write(chunk);
    await writer.close();
  })();
  let received = 0;
  for await (const bytes of b.readable) received += bytes.length;
  await writing;
  const mbps = received / 1e6 / ((performance.now() - start) / 1000);
  await Promise.all([a.close(), b.close()]);
  return mbps;
}

async function round(kind: Kind, nats: NatsServer): Promise<Figures> {
  const [natsP50, natsP99] = kind === "nats" ? await natsFloor(nats) : [0, 0];
  const rawMBps = await oneWay(kind, nats);
  const json = await channels<Api>(kind, nats, false);
  const echo = json.client.remote.echo;
  const [p50, p99] = await latency(LATENCY_CALLS, () => echo(SMALL));
  let started = 0;
  let start = performance.now();
  await Promise.all(Array.from({ length: 256 }, async () => {
    while (started++ < MANY_CALLS) await echo(SMALL);
  }));
  const callsPerSecond = MANY_CALLS / ((performance.now() - start) / 1000);
  await json.close();

  const raw = await channels<RawApi>(kind, nats, true);
  const big = new Uint8Array(MIB).fill(3);
  for (let i = 0; i < 4; i++) await raw.client.remote.echo(big);
  start = performance.now();
  for (let i = 0; i < BIG_CALLS; i++) await raw.client.remote.echo(big);
  const bigMBps = (BIG_CALLS * MIB) / 1e6 / ((performance.now() - start) / 1000);

  // The slow consumer: about 4 ms per MiB.
  const before = Deno.memoryUsage().rss;
  const serverBefore = serverRss(nats.pid);
  let peak = before;
  let serverPeak = serverBefore;
  const sampler = setInterval(() => {
    peak = Math.max(peak, Deno.memoryUsage().rss);
    serverPeak = Math.max(serverPeak, serverRss(nats.pid));
  }, 10);
  start = performance.now();
  let received = 0;
  for await (const chunk of raw.client.remote.chunks(STREAM_MIB)) {
    received += chunk.length;
    await new Promise((resolve) => setTimeout(resolve, 4));
  }
  const streamMBps = received / 1e6 / ((performance.now() - start) / 1000);
  clearInterval(sampler);
  await raw.close();
  return {
    p50,
    p99,
    natsP50,
    natsP99,
    callsPerSecond,
    rawMBps,
    bigMBps,
    streamMBps,
    rssMiB: (peak - before) / MIB,
    serverRssMiB: kind === "nats" ? (serverPeak - serverBefore) / MIB : 0,
  };
}

/** The resident set of process `pid`, in bytes (0 where /proc is missing). */
function serverRss(pid: number): number {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    return Number(status.match(/VmRSS:\s+(\d+) kB/)?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const nats = await startNatsServer(Deno.env.get("NATS_CONF") ?? "");
const results: Record<Kind, Figures[]> = { tcp: [], nats: [] };
try {
  for (let r = 0; r < ROUNDS; r++) {
    for (const kind of (r % 2 === 0 ? ["tcp", "nats"] : ["nats", "tcp"]) as Kind[]) {
      const figures = await round(kind, nats);
      results[kind].push(figures);
      console.error(`round ${r + 1} ${kind}: ${JSON.stringify(figures)}`);
    }
  }
} finally {
  await nats.stop();
}

const fmt = (value: number, digits = 0) =>
  value.toLocaleString("en-US", { maximumFractionDigits: digits });
console.log(
  `| transport | small call p50 / p99 (µs) | plain NATS request p50 / p99 (µs) | calls/s, 256 in flight | ` +
    `transport alone, 1 MiB writes one way (MB/s) | 1 MiB raw calls (MB/s) | ` +
    `${STREAM_MIB} MiB stream, slow consumer (MB/s) | peak RSS growth (MiB): process / nats-server |`,
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
for (const kind of ["tcp", "nats"] as Kind[]) {
  const m = (key: keyof Figures) => median(results[kind].map((f) => f[key]));
  console.log(
    `| ${kind} | ${fmt(m("p50"))} / ${fmt(m("p99"))} | ${
      kind === "nats" ? `${fmt(m("natsP50"))} / ${fmt(m("natsP99"))}` : "–"
    } | ${fmt(m("callsPerSecond"))} | ${fmt(m("rawMBps"))} | ${fmt(m("bigMBps"))} | ${
      fmt(m("streamMBps"))
    } | ${fmt(m("rssMiB"), 1)} / ${kind === "nats" ? fmt(m("serverRssMiB"), 1) : "–"} |`,
  );
}
