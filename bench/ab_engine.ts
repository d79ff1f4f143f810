// A/B of the channel engine between two checkouts of this repository, in one run: each
// measurement is a fresh process, rounds interleave the two sides (and alternate which goes
// first), and the table gives each side's median with its min–max and the median ratio
// (higher is better: B/A for rates, A/B for times). On a shared, loaded machine wall-clock
// figures swing by 2× between runs, so each case also reports the process's CPU time per
// operation (both ends run in the one process), which other processes disturb far less; its
// ratio is the second column of ratios.
//
//   deno run -A bench/ab_engine.ts <dir A> <dir B> [rounds=5] [cases, comma-separated]
//
// Cases (all by default): p50, p50Stdio, p50Worker, calls256, notify, raw1m, raw1mHandover,
// raw64k, raw64kStdio, spawn, spawnStdio (the no-regression set is
// p50,p50Stdio,calls256,notify,raw1m,spawn). The stdio cases ask for stdio; p50Worker and spawn
// use each tree's default worker transport.
// The stdio cases' CPU column is the parent's only.
//
// Both sides run this file's measurements against their own code through its public API
// (channel/mod.ts, codecs, transports/unix.ts, workers/mod.ts), so any two commits compare.
//
//   one case:  deno run -A bench/ab_engine.ts --case <case> <dir>   prints one number

import process from "node:process";

const CASES = {
  p50: { label: "small call p50, Unix socket (µs)", lowerIsBetter: true },
  p50Stdio: { label: "small call p50, stdio worker (µs)", lowerIsBetter: true },
  p50Worker: { label: "small call p50, worker, default transport (µs)", lowerIsBetter: true },
  calls256: { label: "calls/s, 256 in flight, Unix socket", lowerIsBetter: false },
  notify: { label: "notifications/s, raw 64 B, Unix socket", lowerIsBetter: false },
  raw1m: { label: "1 MiB raw calls, Unix socket (MB/s)", lowerIsBetter: false },
  raw1mHandover: {
    label: "1 MiB raw calls, transfer() + recycle() where the tree has them (MB/s)",
    lowerIsBetter: false,
  },
  raw64k: { label: "64 KiB raw calls, Unix socket (MB/s)", lowerIsBetter: false },
  raw64kStdio: { label: "64 KiB raw calls, stdio worker (MB/s)", lowerIsBetter: false },
  spawn: { label: "worker spawn-to-first-reply (ms)", lowerIsBetter: true },
  spawnStdio: { label: "worker spawn-to-first-reply, stdio (ms)", lowerIsBetter: true },
} as const;
type CaseName = keyof typeof CASES;

if (Deno.args[0] === "--case") {
  const { value, cpu } = await measure(Deno.args[1] as CaseName, Deno.args[2]);
  console.log(`${value} ${cpu}`);
} else {
  await compare();
}

async function compare(): Promise<void> {
  const [a, b] = [Deno.args[0], Deno.args[1]].map((dir) => Deno.realPathSync(dir));
  const rounds = Number(Deno.args[2] ?? 5);
  const cases = (Deno.args[3]?.split(",") ?? Object.keys(CASES)) as CaseName[];
  const results = new Map<string, number[]>();
  const cpus = new Map<string, number[]>();
  for (let round = 0; round < rounds; round++) {
    for (const name of cases) {
      const order = round % 2 === 0 ? [a, b] : [b, a];
      for (const dir of order) {
        const { value, cpu } = await runCase(name, dir);
        const key = `${name}|${dir}`;
        results.set(key, [...results.get(key) ?? [], value]);
        cpus.set(key, [...cpus.get(key) ?? [], cpu]);
        console.error(
          `round ${round + 1} ${name} ${dir === a ? "A" : "B"}: ${value.toFixed(2)} (cpu ${
            cpu.toFixed(3)
          })`,
        );
      }
    }
  }
  console.log(`A = ${a}\nB = ${b}\n`);
  console.log(
    "| case | A median (min–max) | B median (min–max) | ratio | paired ratio, median (q1–q3) | CPU µs/op A → B | CPU ratio | paired CPU ratio (q1–q3) |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const name of cases) {
    const va = results.get(`${name}|${a}`)!;
    const vb = results.get(`${name}|${b}`)!;
    const [ma, mb] = [median(va), median(vb)];
    const ratio = CASES[name].lowerIsBetter ? ma / mb : mb / ma;
    const [ca, cb] = [median(cpus.get(`${name}|${a}`)!), median(cpus.get(`${name}|${b}`)!)];
    const cpu = Number.isNaN(ca) ? "–" : `${ca.toFixed(3)} → ${cb.toFixed(3)}`;
    const cpuRatio = Number.isNaN(ca) ? "–" : (ca / cb).toFixed(3);
    // Round by round (the two sides of a round ran back to back), higher is better.
    const paired = va.map((x, i) => CASES[name].lowerIsBetter ? x / vb[i] : vb[i] / x);
    const ca1 = cpus.get(`${name}|${a}`)!, cb1 = cpus.get(`${name}|${b}`)!;
    const pairedCpu = Number.isNaN(ca) ? "–" : quartiles(ca1.map((x, i) => x / cb1[i]));
    console.log(
      `| ${CASES[name].label} | ${fmt(ma)} (${fmt(Math.min(...va))}–${fmt(Math.max(...va))}) | ${
        fmt(mb)
      } (${fmt(Math.min(...vb))}–${fmt(Math.max(...vb))}) | ${ratio.toFixed(3)} | ${
        quartiles(paired)
      } | ${cpu} | ${cpuRatio} | ${pairedCpu} |`,
    );
  }
}

async function runCase(name: CaseName, dir: string): Promise<Sample> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(import.meta.url).pathname, "--case", name, dir],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!output.success) throw new Error(`case ${name} failed in ${dir}`);
  const [value, cpu] = new TextDecoder().decode(output.stdout).trim().split(" ").map(Number);
  return { value, cpu };
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** "median (q1–q3)" of ratios. */
function quartiles(values: number[]): string {
  const sorted = [...values].sort((x, y) => x - y);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.round(q * (sorted.length - 1)))];
  return `${median(values).toFixed(3)} (${at(0.25).toFixed(3)}–${at(0.75).toFixed(3)})`;
}

function fmt(value: number): string {
  return value >= 1000 ? Math.round(value).toLocaleString("en-US") : value.toFixed(1);
}

// ---------------------------------------------------------------- one measurement

/** One measurement: the figure, and the process's CPU µs per operation (NaN when not known). */
interface Sample {
  value: number;
  cpu: number;
}

/** Runs `op`, returning its result and the CPU µs it took per one of `ops` operations. */
async function cpuPer<T>(ops: number, op: () => Promise<T>): Promise<[T, number]> {
  const before = process.cpuUsage();
  const result = await op();
  const used = process.cpuUsage(before);
  return [result, (used.user + used.system) / ops];
}

interface Api {
  // deno-lint-ignore no-explicit-any
  openChannel(transport: unknown, options: any): Promise<any>;
  /** Since issue 16: bytes given up to the channel (absent from older trees). */
  transfer?: (bytes: Uint8Array) => Uint8Array;
}

async function measure(name: CaseName, dir: string): Promise<Sample> {
  const root = `file://${dir}/`;
  if (name === "spawn") return { value: await spawnToFirstReply(root, {}), cpu: NaN };
  if (name === "spawnStdio") {
    return { value: await spawnToFirstReply(root, { transport: "stdio" }), cpu: NaN };
  }
  if (name === "raw64kStdio" || name === "p50Stdio" || name === "p50Worker") {
    return await stdioWorker(name, root);
  }
  const api: Api = await import(`${root}channel/mod.ts`);
  const { jsonCodec } = await import(`${root}codecs/json.ts`);
  const { rawCodec } = await import(`${root}codecs/raw.ts`);
  const unix = await import(`${root}transports/unix.ts`);
  const raw = name === "notify" || name === "raw1m" || name === "raw1mHandover" ||
    name === "raw64k";
  const handover = name === "raw1mHandover" ? api.transfer : undefined;
  // rawCodec became a factory; the tree under comparison may predate that.
  const rawInstance = typeof rawCodec === "function" ? rawCodec() : rawCodec;
  const codec = () => raw ? rawInstance : jsonCodec();
  const sockDir = await Deno.makeTempDir({ dir: "/tmp", prefix: "ab" });
  const listener = await unix.listenUnix(`${sockDir}/s`);
  const accepted = listener.accept();
  const tb = await unix.connectUnix(`${sockDir}/s`);
  const ta = await accepted;
  await listener.close();
  let received = 0;
  const [server, client] = await Promise.all([
    api.openChannel(ta, {
      codec: codec(),
      handlers: {
        echo: handover === undefined
          ? (value: unknown) => value
          : (value: Uint8Array) => handover(value),
        note: () => void received++,
        count: () => raw ? new Uint8Array(new Float64Array([received]).buffer) : received,
      },
    }),
    api.openChannel(tb, { codec: codec() }),
  ]);
  try {
    return await run(name, client, () => received);
  } finally {
    await Promise.all([client.close(), server.close()]);
    await Deno.remove(sockDir, { recursive: true });
  }
}

// deno-lint-ignore no-explicit-any
async function run(name: CaseName, client: any, received: () => number): Promise<Sample> {
  const small = { id: 42, name: "conduit", tags: ["bench", "small", "call"] };
  const echo = client.remote.echo;
  switch (name) {
    case "p50": {
      for (let i = 0; i < 3000; i++) await echo(small);
      const samples = new Float64Array(20_000);
      const [, cpu] = await cpuPer(samples.length, async () => {
        for (let i = 0; i < samples.length; i++) {
          const start = performance.now();
          await echo(small);
          samples[i] = performance.now() - start;
        }
      });
      samples.sort();
      return { value: samples[samples.length >> 1] * 1000, cpu };
    }
    case "calls256": {
      const lanes = async (total: number) => {
        let started = 0;
        const lane = async () => {
          while (started++ < total) await echo(small);
        };
        await Promise.all(Array.from({ length: 256 }, lane));
      };
      await lanes(20_000);
      const total = 150_000;
      const start = performance.now();
      const [, cpu] = await cpuPer(total, () => lanes(total));
      return { value: total / ((performance.now() - start) / 1000), cpu };
    }
    case "notify": {
      const note = new Uint8Array(64).fill(7);
      const send = async (count: number) => {
        for (let i = 0; i < count; i++) {
          if (client.desiredSize <= 0) await client.ready;
          client.notify("note", note);
        }
        await client.remote.count(new Uint8Array(0));
      };
      await send(50_000);
      const total = 500_000;
      const before = received();
      const start = performance.now();
      const [, cpu] = await cpuPer(total, () => send(total));
      const elapsed = performance.now() - start;
      if (received() - before !== total) throw new Error("notifications lost");
      return { value: total / (elapsed / 1000), cpu };
    }
    case "raw1m":
    case "raw1mHandover":
    case "raw64k": {
      const blob = new Uint8Array(name === "raw64k" ? 64 * 1024 : 1024 * 1024).fill(3);
      // With transfer() (the server's echo gives the param back), the client recycles each
      // result, as an application that wants no allocation per call does.
      const recycle = name === "raw1mHandover" && typeof client.recycle === "function";
      const call = recycle
        ? async () => void client.recycle(await echo(blob))
        : async () => void await echo(blob);
      for (let i = 0; i < 30; i++) await call();
      const calls = name === "raw64k" ? 3000 : 300;
      const start = performance.now();
      const [, cpu] = await cpuPer(calls, async () => {
        for (let i = 0; i < calls; i++) await call();
      });
      return { value: calls * blob.length / 1e6 / ((performance.now() - start) / 1000), cpu };
    }
    default:
      throw new Error(`unknown case ${name}`);
  }
}

/**
 * Echo calls to a worker of the tree at `root`, over stdio or (`p50Worker`) its default
 * transport: 64 KiB raw ones for `raw64kStdio`, small ones with the worker's default codec for
 * the others.
 */
async function stdioWorker(
  name: "raw64kStdio" | "p50Stdio" | "p50Worker",
  root: string,
): Promise<Sample> {
  const small = name !== "raw64kStdio";
  const { spawnWorker } = await import(`${root}workers/mod.ts`);
  const { rawCodec } = await import(`${root}codecs/raw.ts`);
  // Inside the tree, so that the worker finds the tree's deno.json (its import map).
  const dir = await Deno.makeTempDir({ dir: new URL(root).pathname, prefix: ".ab-worker" });
  const module = `${dir}/echo_worker.ts`;
  await Deno.writeTextFile(
    module,
    `import { serveWorker } from "${root}workers/mod.ts";\n` +
      `import { rawCodec } from "${root}codecs/raw.ts";\n` +
      "const codec = typeof rawCodec === 'function' ? rawCodec() : rawCodec;\n" +
      `await serveWorker({ echo: (value: unknown) => value }${small ? "" : ", { codec }"});\n`,
  );
  const codec = typeof rawCodec === "function" ? rawCodec() : rawCodec;
  const options = {
    ...(small ? {} : { codec }),
    ...(name === "p50Worker" ? {} : { transport: "stdio" }),
  };
  const worker = await spawnWorker(new URL(`file://${module}`), options);
  try {
    if (small) return await run("p50", worker, () => 0);
    const blob = new Uint8Array(64 * 1024).fill(3);
    for (let i = 0; i < 300; i++) await worker.remote.echo(blob);
    const calls = 3000;
    const start = performance.now();
    const [, cpu] = await cpuPer(calls, async () => {
      for (let i = 0; i < calls; i++) await worker.remote.echo(blob);
    });
    return { value: calls * blob.length / 1e6 / ((performance.now() - start) / 1000), cpu };
  } finally {
    await worker.close();
    await Deno.remove(dir, { recursive: true });
  }
}

async function spawnToFirstReply(root: string, options: object): Promise<number> {
  const { spawnWorker } = await import(`${root}workers/mod.ts`);
  const worker = new URL(`${root}bench/_ping_worker.ts`);
  // One spawn first, so module loading of the parent is not counted.
  const first = await spawnWorker(worker, options);
  await first.remote.ping();
  await first.close();
  const started = performance.now();
  const handle = await spawnWorker(worker, options);
  await handle.remote.ping();
  const elapsed = performance.now() - started;
  await handle.close();
  return elapsed;
}
