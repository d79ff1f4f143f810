/**
 * A soak of `serve()`: how the memory of a server in its own process evolves under connection
 * churn beside hostile peers, against a plain Deno accept loop under the same churn, each in a
 * fresh process, so conduit's share can be told from Deno's.
 *
 *   deno run -A bench/soak.ts [--minutes 3] [--every 10] [--target conduit,control]
 *   deno run -A bench/soak.ts --flood [--minutes 1] [--every 5] [--rate 1000] [--target …]
 *   deno run -A bench/soak.ts --pool [--minutes 3] [--every 10]
 *
 * Churn (default): one server process serves over TCP with auth and over a Unix socket; 10
 * clients connect (half over each), make 20 small calls, one 64 KiB call and one stream of
 * 16 items of 16 KiB, close, and reconnect about a second later, while hostile clients over TCP offer a wrong
 * secret, send garbage or a frame header announcing 100 MB before the handshake, or connect
 * and stay silent past the handshake timeout. The control target is a `Deno.listen` echo
 * server (TCP and Unix, a 16 KiB read buffer per connection) that the same clients drive with
 * the same bytes, unframed; its "refused" connections are the same hostile bytes, closed by
 * the client.
 *
 * Flood (`--flood`): 20 good clients making calls over TCP with auth, alone in one fresh
 * server process ("calm"), then beside a flood of refused handshakes (wrong secrets, garbage,
 * oversized pre-auth frames; `--rate` per second, from 20 loops) in another ("flood"): what refusing costs is the difference of
 * their peaks. With `--target control` the same pair runs against the plain accept loop.
 *
 * Pool (`--pool`): the measured process is a pool parent: a `WorkerPool` of 3 workers
 * (workers/_testdata/echo_worker.ts) that it keeps busy with 8 loops of small calls and streams of 16
 * numbers, SIGKILLing one worker every 10 s; the pool restarts it and retries what it can.
 *
 * Every `--every` seconds the server reports its RSS, its peak RSS (VmHWM), V8's heap size
 * and young generation, and external memory (ArrayBuffers) as they are, then forces a full
 * garbage collection (`--expose-gc`) and reports the live heap and external memory left. A
 * table per run, then the RSS growth from the sample at minute 1 (or 40% into a shorter run)
 * to the end. `--root <dir>` runs the server from another checkout of conduit (A/B); the
 * clients always run this checkout; `--v8-flags <flags>` passes V8 flags to the server (e.g.
 * `--max-semi-space-size=4`, which bounds the young generation). Loopback only; every loop is bounded by the deadline.
 *
 * @module
 */

import { openChannel } from "../channel/mod.ts";
import { rawCodec } from "../codecs/raw.ts";
import { connectTcp } from "../transports/tcp.ts";
import { connectUnix } from "../transports/unix.ts";
import { lines } from "./report/children/_lines.ts";

const SELF = new URL(import.meta.url).pathname;
const ROOT = new URL("..", import.meta.url).pathname;
const SECRET = "soak-secret-shared-by-good-clients";
const MiB = 1024 * 1024;
const HANDSHAKE_TIMEOUT_MS = 2000;
/** More V8 flags for the server process, e.g. `--max-semi-space-size=4` (comma-separated). */
const V8_FLAGS = option("v8-flags", "");

type Kind = "conduit" | "control" | "pool";

function option(name: string, fallback: string): string {
  const at = Deno.args.indexOf(`--${name}`);
  return at >= 0 ? Deno.args[at + 1] : fallback;
}

// ------------------------------------------------------------------------------ the parent

async function main(): Promise<void> {
  const flood = Deno.args.includes("--flood");
  const pool = Deno.args.includes("--pool");
  const minutes = Number(option("minutes", flood ? "1" : "3"));
  const every = Number(option("every", flood ? "5" : "10"));
  const targets = option("target", "conduit,control").split(",") as Kind[];
  const root = Deno.realPathSync(option("root", ROOT));
  console.log(
    `soak: ${
      flood ? "flood" : pool ? "pool" : "churn"
    }, ${minutes} min per run, a sample every ${every} s, ` +
      `server from ${root}, Deno ${Deno.version.deno}`,
  );
  const results: string[] = [];
  const base = { root, minutes, every, flood };
  if (pool) {
    const crashes = await run({ ...base, kind: "pool", good: 0, hostile: 0 });
    results.push(`pool: ${crashes.growth}`);
  }
  for (const kind of pool ? [] : targets) {
    if (flood) {
      const calm = await run({ ...base, kind, good: 20, hostile: 0 });
      const loud = await run({ ...base, kind, good: 20, hostile: FLOOD_LOOPS });
      results.push(
        `${kind}: peak RSS calm ${mib(calm.peak)}, flood ${mib(loud.peak)}: ` +
          `+${mib(loud.peak - calm.peak)} MiB for ${loud.counts.refused} refused handshakes; ` +
          `end RSS +${mib(loud.last.rss - calm.last.rss)} MiB`,
      );
    } else {
      const churn = await run({ ...base, kind, good: 10, hostile: 4 });
      results.push(`${kind}: ${churn.growth}`);
    }
  }
  console.log("");
  for (const line of results) console.log(line);
}

interface RunOptions {
  kind: Kind;
  root: string;
  minutes: number;
  every: number;
  good: number;
  hostile: number;
  flood: boolean;
}

interface Sample {
  t: number;
  rss: number;
  hwm: number;
  heapTotal: number;
  newSpace: number;
  external: number;
  heapAfterGc: number;
  externalAfterGc: number;
  /** What the measured process counted itself (the pool parent's calls and crashes). */
  counts?: Counts;
}

interface Counts {
  sessions: number;
  calls: number;
  refused: number;
  failures: number;
}

async function run(options: RunOptions): Promise<
  { peak: number; last: Sample; growth: string; counts: Counts }
> {
  const { kind, minutes, every } = options;
  const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "soak" });
  const v8Flags = `--v8-flags=--expose-gc${V8_FLAGS ? `,${V8_FLAGS}` : ""}`;
  const server = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", v8Flags, SELF, "--role", kind, "--root", options.root, "--dir", dir],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const next = lineReader(server.stdout);
  const line = async () => (await next()) ?? Promise.reject(new Error("the server ended"));
  const writer = server.stdin.getWriter();
  const port = Number((await line()).split(" ")[1]);
  const target: Target = { kind, port, path: `${dir}/s` };
  const sample = async (): Promise<Sample> => {
    await writer.write(new TextEncoder().encode("sample\n"));
    return JSON.parse(await line());
  };
  const label = `${kind}${options.flood ? options.hostile > 0 ? " flood" : " calm" : ""}`;
  console.log(
    kind === "pool"
      ? `\npool: 3 workers, 8 loops of calls, a worker SIGKILLed every ${KILL_EVERY_MS / 1000} s` +
        " (sessions: restarts, refused: kills)"
      : `\n${label}: ${options.good} good clients, ${options.hostile} hostile loops`,
  );
  console.log(
    "   t s   RSS  peak  heap total  new space  external | after GC: heap  external" +
      " | sessions     calls  refused  failed",
  );
  const counts: Counts = { sessions: 0, calls: 0, refused: 0, failures: 0 };
  const start = performance.now();
  const deadline = start + minutes * 60_000;
  const samples: Sample[] = [];
  const show = (s: Sample) =>
    console.log(
      `${pad(s.t, 6)} ${pad(mib(s.rss), 5)} ${pad(mib(s.hwm), 5)} ${pad(mib(s.heapTotal), 11)} ` +
        `${pad(mib(s.newSpace), 10)} ${pad(mib(s.external), 9)} |` +
        `${pad(mib(s.heapAfterGc), 15)} ${pad(mib(s.externalAfterGc), 9)} |` +
        `${pad(counts.sessions, 9)} ${pad(counts.calls, 9)} ${pad(counts.refused, 8)} ` +
        `${pad(counts.failures, 7)}`,
    );
  /** Asks the server for a sample at `t` s, prints it, and takes its counts. */
  const take = async (t: number) => {
    const s = { ...(await sample()), t };
    if (s.counts !== undefined) Object.assign(counts, s.counts);
    samples.push(s);
    show(s);
  };
  await take(0);
  const clients: Promise<void>[] = [];
  for (let i = 0; i < options.good; i++) {
    const over = options.flood || i % 2 === 0 ? "tcp" : "unix";
    clients.push(goodLoop(target, over, deadline, counts, options.flood));
  }
  for (let i = 0; i < options.hostile; i++) {
    clients.push(hostileLoop(target, i, deadline, counts, options.flood));
  }
  while (performance.now() < deadline) {
    const next = start + (samples.length * every) * 1000;
    await sleep(Math.max(0, Math.min(next, deadline) - performance.now()));
    await take(Math.round((performance.now() - start) / 1000));
  }
  await Promise.all(clients);
  await writer.close();
  while ((await next()) !== undefined) { /* drain */ }
  await server.status;
  await Deno.remove(dir, { recursive: true });
  const last = samples[samples.length - 1];
  const from = Math.min(60, minutes * 60 * 0.4);
  const base = samples.find((s) => s.t >= from) ?? samples[0];
  const growth = `RSS ${mib(base.rss)} MiB at ${base.t} s -> ${mib(last.rss)} MiB at ${last.t} s` +
    ` (${signed((last.rss / base.rss - 1) * 100)} %), peak ${mib(last.hwm)} MiB, ` +
    `heap after GC ${mib(base.heapAfterGc)} -> ${mib(last.heapAfterGc)} MiB; ` +
    `${counts.sessions} sessions, ${counts.calls} calls, ${counts.refused} refused, ` +
    `${counts.failures} failed`;
  console.log(growth);
  return { peak: last.hwm, last, growth, counts };
}

interface Target {
  kind: Kind;
  port: number;
  path: string;
}

/** A good client: connects, calls, streams, closes, and again, until the deadline. */
async function goodLoop(
  target: Target,
  over: "tcp" | "unix",
  deadline: number,
  counts: Counts,
  callsOnly: boolean,
): Promise<void> {
  while (performance.now() < deadline) {
    try {
      await session(target, over, deadline, counts, callsOnly);
      counts.sessions++;
      // About one session per client per second: churn, not a connection benchmark.
      await sleep(Math.min(500 + Math.random() * 1000, Math.max(0, deadline - performance.now())));
    } catch (error) {
      counts.failures++;
      if (counts.failures <= 3) console.error(`a good client failed: ${error}`);
      await sleep(100);
    }
  }
}

const SMALL = new Uint8Array(64).fill(1);
const MEDIUM = new Uint8Array(64 * 1024).fill(2);
const ITEM_BYTES = 16 * 1024;
const ITEMS = 16;

interface Soaked {
  echo(bytes: Uint8Array): Uint8Array;
  items(count: Uint8Array): AsyncIterable<Uint8Array>;
}

/** One connection of a good client: calls, then a stream (in the flood, calls until the end). */
async function session(
  target: Target,
  over: "tcp" | "unix",
  deadline: number,
  counts: Counts,
  callsOnly: boolean,
): Promise<void> {
  const connection = target.kind === "conduit"
    ? await conduitSession(target, over)
    : await plainSession(target, over);
  try {
    // In the flood, a session lasts until the deadline: only the attack churns.
    const rounds = callsOnly ? Infinity : 1;
    for (let round = 0; round < rounds && performance.now() < deadline; round++) {
      for (let i = 0; i < 20; i++) {
        await connection.echo(SMALL);
        counts.calls++;
      }
      if (callsOnly) continue;
      await connection.echo(MEDIUM);
      counts.calls++;
      await connection.items();
      counts.calls++;
    }
  } finally {
    await connection.close();
  }
}

interface Connection {
  echo(bytes: Uint8Array): Promise<void>;
  /** Has the server send ITEMS items of ITEM_BYTES. */
  items(): Promise<void>;
  close(): Promise<void> | void;
}

async function conduitSession(target: Target, over: "tcp" | "unix"): Promise<Connection> {
  const transport = over === "tcp"
    ? await connectTcp({ port: target.port })
    : await connectUnix(target.path);
  const channel = await openChannel<Soaked>(transport, {
    codec: rawCodec(),
    ...(over === "tcp" ? { auth: { secret: SECRET } } : {}),
  });
  return {
    echo: async (bytes) => void await channel.remote.echo(bytes),
    async items() {
      let items = 0;
      for await (const item of channel.remote.items(new Uint8Array([ITEMS]))) {
        items += item.length === ITEM_BYTES ? 1 : 0;
      }
      if (items !== ITEMS) throw new Error(`${items} items of ${ITEMS}`);
    },
    close: () => channel.close(),
  };
}

/** The same bytes as a conduit session, echoed by the plain server, unframed. */
async function plainSession(target: Target, over: "tcp" | "unix"): Promise<Connection> {
  const conn = over === "tcp"
    ? await Deno.connect({ port: target.port })
    : await Deno.connect({ transport: "unix", path: target.path });
  const buffer = new Uint8Array(64 * 1024);
  const echo = async (bytes: Uint8Array) => {
    await conn.write(bytes);
    for (let got = 0; got < bytes.length;) {
      const n = await conn.read(buffer);
      if (n === null) throw new Error("the plain server closed");
      got += n;
    }
  };
  return {
    echo,
    async items() {
      await echo(new Uint8Array(ITEMS));
      for (let i = 0; i < ITEMS; i++) await echo(MEDIUM.subarray(0, ITEM_BYTES));
    },
    close: () => conn.close(),
  };
}

/** Refused connections per second in the flood, spread over its loops. */
const FLOOD_RATE = Number(option("rate", "1000"));
const FLOOD_LOOPS = 20;

const ATTACKS = ["wrong secret", "garbage", "oversized frame", "silent"] as const;

/** A hostile client over TCP: one attack after another until the deadline. */
async function hostileLoop(
  target: Target,
  index: number,
  deadline: number,
  counts: Counts,
  flood: boolean,
): Promise<void> {
  // In the flood each loop keeps its share of --rate attacks per second, whatever the target.
  const interval = flood ? 1000 / (FLOOD_RATE / FLOOD_LOOPS) : 0;
  const start = performance.now();
  for (let round = index; performance.now() < deadline; round++) {
    // In the flood, silence is left out: it costs the server a slot, not memory.
    const attack = ATTACKS[round % (flood ? 3 : 4)];
    try {
      await hostile(target, attack);
      counts.refused++;
    } catch (error) {
      counts.failures++;
      if (counts.failures <= 3) console.error(`a hostile client failed (${attack}): ${error}`);
    }
    const due = flood ? start + (round - index + 1) * interval : performance.now() + 50;
    await sleep(Math.max(0, Math.min(due, deadline) - performance.now()));
  }
}

async function hostile(target: Target, attack: (typeof ATTACKS)[number]): Promise<void> {
  if (attack === "wrong secret" && target.kind === "conduit") {
    const transport = await connectTcp({ port: target.port });
    try {
      await openChannel(transport, {
        codec: rawCodec(),
        auth: { secret: "a wrong secret, as long as the right one" },
      });
    } catch {
      return;
    }
    throw new Error("a wrong secret got in");
  }
  const conn = await Deno.connect({ port: target.port });
  try {
    if (attack === "silent") {
      await sleep(HANDSHAKE_TIMEOUT_MS + 500);
      return;
    }
    const bytes = attack === "garbage"
      ? crypto.getRandomValues(new Uint8Array(4096))
      : attack === "oversized frame"
      ? new Uint8Array([0x05, 0xf5, 0xe1, 0x00, ...new Uint8Array(1020)]) // 100 MB announced
      : new Uint8Array(200).fill(7); // the control's "wrong secret": a HELLO's worth of bytes
    await conn.write(bytes).catch(() => {});
    if (target.kind === "conduit") {
      // conduit answers with its HELLO, maybe a GOODBYE, then closes: read to the end.
      const buffer = new Uint8Array(4096);
      while ((await conn.read(buffer).catch(() => null)) !== null) { /* until closed */ }
    }
  } finally {
    conn.close();
  }
}

// ------------------------------------------------------------------------------ the server

async function runServer(kind: Kind, root: string): Promise<void> {
  const dir = option("dir", "/tmp");
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("the server needs --v8-flags=--expose-gc");
  let stop: () => Promise<void>;
  let port = 0;
  let counts: (() => Counts) | undefined;
  if (kind === "pool") {
    const crashing = await crashChurn(root);
    stop = crashing.stop;
    counts = crashing.counts;
  } else if (kind === "conduit") {
    const { serve } = await import(`${root}/channel/mod.ts`);
    const { rawCodec } = await import(`${root}/codecs/raw.ts`);
    const { listenTcp } = await import(`${root}/transports/tcp.ts`);
    const { listenUnix } = await import(`${root}/transports/unix.ts`);
    const handlers = {
      echo: (bytes: Uint8Array) => bytes,
      async *items(count: Uint8Array) {
        for (let i = 0; i < count[0]; i++) yield new Uint8Array(ITEM_BYTES).fill(i);
      },
    };
    const common = {
      codec: rawCodec(),
      handlers,
      maxConnections: 1000,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
    };
    const listener = await listenTcp({ port: 0 });
    port = (listener.addr as Deno.NetAddr).port;
    const overTcp = serve(listener, { ...common, auth: { secret: SECRET } });
    const overUnix = serve(await listenUnix(`${dir}/s`), common);
    stop = () => Promise.all([overTcp.close(), overUnix.close()]).then(() => {});
  } else {
    const tcp = Deno.listen({ port: 0, hostname: "127.0.0.1" });
    const unix = Deno.listen({ transport: "unix", path: `${dir}/s` });
    port = (tcp.addr as Deno.NetAddr).port;
    const loops = [acceptEchoes(tcp), acceptEchoes(unix)];
    stop = async () => {
      tcp.close();
      unix.close();
      await Promise.all(loops);
    };
  }
  console.log(`ready ${port}`);
  const next = lineReader(Deno.stdin.readable);
  while ((await next()) !== undefined) {
    console.log(JSON.stringify({ ...(await measure(gc)), counts: counts?.() }));
  }
  await stop();
  Deno.exit(0);
}

const KILL_EVERY_MS = 10_000;

/** A pool parent under crash churn: calls in loops, a worker SIGKILLed every KILL_EVERY_MS. */
async function crashChurn(
  root: string,
): Promise<{ stop: () => Promise<void>; counts: () => Counts }> {
  const { WorkerPool } = await import(`${root}/workers/mod.ts`);
  const worker = new URL("workers/_testdata/echo_worker.ts", `file://${root}/`);
  const pool = new WorkerPool(worker, { size: 3, concurrency: 4, retryable: ["echo", "pid"] });
  await pool.started();
  let running = true;
  let calls = 0;
  let failures = 0;
  let kills = 0;
  const loop = async () => {
    const payload = { text: "x".repeat(200), n: 1 };
    while (running) {
      try {
        for (let i = 0; i < 20 && running; i++) {
          await pool.remote.echo(payload);
          calls++;
        }
        let seen = 0;
        for await (const _ of pool.remote.count(16)) seen++;
        if (seen === 16) calls++;
      } catch {
        // A stream whose worker was killed fails: counted, not retried.
        failures++;
      }
    }
  };
  const loops = Array.from({ length: 8 }, loop);
  const killer = setInterval(async () => {
    try {
      Deno.kill(await pool.remote.pid(), "SIGKILL");
      kills++;
    } catch {
      failures++;
    }
  }, KILL_EVERY_MS);
  return {
    stop: async () => {
      running = false;
      clearInterval(killer);
      await Promise.all(loops);
      await pool.close();
    },
    counts: () => ({
      sessions: pool.stats.restarts,
      calls,
      refused: kills,
      failures,
    }),
  };
}

/** A plain Deno accept loop: echoes each connection's bytes until it ends. */
async function acceptEchoes(listener: Deno.Listener): Promise<void> {
  try {
    for await (const conn of listener) void echoConn(conn);
  } catch {
    // Closed.
  }
}

async function echoConn(conn: Deno.Conn): Promise<void> {
  const buffer = new Uint8Array(16 * 1024);
  try {
    for (let n = await conn.read(buffer); n !== null; n = await conn.read(buffer)) {
      await conn.write(buffer.subarray(0, n));
    }
  } catch {
    // Reset by the peer.
  }
  try {
    conn.close();
  } catch {
    // Closed already.
  }
}

async function measure(gc: () => void): Promise<Omit<Sample, "t">> {
  const status = await Deno.readTextFile("/proc/self/status");
  const kib = (field: string) => Number(status.match(new RegExp(`${field}:\\s+(\\d+)`))![1]) * 1024;
  const before = Deno.memoryUsage();
  const { getHeapSpaceStatistics } = await import("node:v8");
  const newSpace = getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
  gc();
  const after = Deno.memoryUsage();
  return {
    rss: kib("VmRSS"),
    hwm: kib("VmHWM"),
    heapTotal: before.heapTotal,
    newSpace: newSpace?.space_size ?? 0,
    external: before.external,
    heapAfterGc: after.heapUsed,
    externalAfterGc: after.external,
  };
}

// ------------------------------------------------------------------------------ helpers

/** Reads `stream` line by line: each call, the next line, or undefined at the end. */
function lineReader(stream: ReadableStream<Uint8Array>): () => Promise<string | undefined> {
  const reading = lines(stream.pipeThrough(new TextDecoderStream()));
  return async () => (await reading.next()).value ?? undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function mib(bytes: number): string {
  return (bytes / MiB).toFixed(1);
}

function signed(value: number): string {
  return `${value >= 0 ? "+" : ""}${value.toFixed(1)}`;
}

function pad(value: string | number, width: number): string {
  return String(value).padStart(width);
}

// Last: the classes and constants above are initialized by now.
if (Deno.args[0] === "--role") await runServer(Deno.args[1] as Kind, option("root", ROOT));
else await main();
