// How much a long child -> parent stream grows the parent: a worker (bench/_stream_100mb_worker.ts,
// spawned with default options) streams N MiB of 1 MiB items, the parent drops each item, and
// never calls recycle(). Reports per run the parent's peak RSS growth (VmHWM, reset at the
// start, and `Deno.memoryUsage()` sampled every 5 ms: rss, heapUsed, external) and MB/s.
// Case `bare` is the floor without conduit: a Deno child writes the same bytes to its stdout
// and the parent reads each 1 MiB with a BYOB reader into a fresh buffer, dropped as well.
// Each run is a fresh driver process (this module with `--driver`), the cases interleaved,
// so one run's heap does not hide the next one's growth.
//
// With `--against DIR` every conduit case runs in the same rounds from DIR too (another checkout
// of this repository, e.g. `git archive HEAD~1 | tar -x -C DIR`): an A/B on one machine state.
//
//   deno run -A bench/stream_memory.ts [MiB=1024] [rounds=3] [--against DIR]
//   deno run -A bench/stream_memory.ts --driver stdio|unix|bare MiB   (one run, prints JSON)

import { spawnWorker } from "@conduit/ipc/workers";
import type { StreamApi } from "./_stream_100mb_worker.ts";
import { resetPeakRss, rssOf, runFresh } from "./report/_measure.ts";
import process from "node:process";

const ITEM_BYTES = 1024 * 1024;
const SAMPLE_MS = 5;
const TRANSPORTS = ["stdio", "unix", "bare"] as const;
type Transport = typeof TRANSPORTS[number];

/** One run's figures, MiB and MB/s. */
export interface StreamMemoryRun {
  transport: Transport;
  mbps: number;
  /** This process's CPU time (user and system) over the stream, ms per GiB streamed. */
  cpuMsPerGiB: number;
  /** VmHWM at the end minus VmRSS at the start. */
  peakRssGrowthMiB: number;
  /** The largest sampled growth of each `Deno.memoryUsage()` field over its start. */
  sampled: { rss: number; heapUsed: number; external: number };
}

const WORKER = new URL("./_stream_100mb_worker.ts", import.meta.url);
const MIB = 2 ** 20;

/** Streams `mib` MiB over `transport` (or without conduit: `bare`), measuring this process. */
export async function streamOnce(transport: Transport, mib: number): Promise<StreamMemoryRun> {
  const source = transport === "bare" ? await bareSource(mib) : await workerSource(transport, mib);
  if (!resetPeakRss("self")) throw new Error("Cannot reset the peak RSS: Linux 4.0+ needed");
  const start = Deno.memoryUsage();
  const startRss = rssOf("self")!.current;
  const peak = { rss: 0, heapUsed: 0, external: 0 };
  const sample = () => {
    const now = Deno.memoryUsage();
    peak.rss = Math.max(peak.rss, now.rss - start.rss);
    peak.heapUsed = Math.max(peak.heapUsed, now.heapUsed - start.heapUsed);
    peak.external = Math.max(peak.external, now.external - start.external);
  };
  const timer = setInterval(sample, SAMPLE_MS);
  let bytes = 0;
  let index = 0;
  const began = performance.now();
  const cpuBefore = process.cpuUsage();
  try {
    for await (const item of source.items) {
      const fill = transport === "bare" ? 7 : index & 0xff;
      index++;
      if (item[0] !== fill || item[item.length - 1] !== fill) {
        throw new Error(`item ${index - 1} arrived changed`);
      }
      bytes += item.length;
    }
  } finally {
    clearInterval(timer);
  }
  const seconds = (performance.now() - began) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  sample();
  const hwm = rssOf("self")!.peak;
  await source.close();
  if (bytes !== mib * ITEM_BYTES) throw new Error(`streamed ${bytes} of ${mib * ITEM_BYTES}`);
  return {
    transport,
    mbps: bytes / 1e6 / seconds,
    cpuMsPerGiB: (cpu.user + cpu.system) / 1000 / (bytes / 2 ** 30),
    peakRssGrowthMiB: (hwm - startRss) / MIB,
    sampled: {
      rss: peak.rss / MIB,
      heapUsed: peak.heapUsed / MIB,
      external: peak.external / MIB,
    },
  };
}

interface Source {
  items: AsyncIterable<Uint8Array>;
  close(): Promise<unknown>;
}

/** A fresh worker, with one item streamed so that the channel's code is loaded and warm. */
async function workerSource(transport: "stdio" | "unix", mib: number): Promise<Source> {
  const worker = await spawnWorker<StreamApi>(WORKER, { transport });
  for await (const _ of worker.remote.chunks({ count: 1, bytes: ITEM_BYTES }));
  return {
    items: worker.remote.chunks({ count: mib, bytes: ITEM_BYTES }, { timeout: Infinity }),
    close: () => worker.close(),
  };
}

/** A Deno child writing 1 MiB items to its stdout, read into a fresh buffer each. */
async function bareSource(mib: number): Promise<Source> {
  const program = `const item = new Uint8Array(${ITEM_BYTES}).fill(7);
    for (let i = 0; i <= ${mib}; i++) {
      for (let at = 0; at < item.length;) at += Deno.stdout.writeSync(item.subarray(at));
    }`;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", program],
    stdin: "null",
    stdout: "piped",
  }).spawn();
  const reader = child.stdout.getReader({ mode: "byob" });
  const next = async (): Promise<Uint8Array | undefined> => {
    let item = new Uint8Array(ITEM_BYTES);
    for (let fill = 0; fill < ITEM_BYTES;) {
      const { done, value } = await reader.read(item.subarray(fill));
      if (done) return undefined;
      item = new Uint8Array(value.buffer);
      fill += value.length;
    }
    return item;
  };
  await next(); // the warm-up item
  return {
    items: (async function* () {
      for (let item = await next(); item !== undefined; item = await next()) yield item;
    })(),
    close: async () => {
      await child.status;
    },
  };
}

function median(values: number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function range(values: number[], digits: number): string {
  return `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${
    Math.max(...values).toFixed(digits)
  })`;
}

if (import.meta.main) {
  if (Deno.args[0] === "--driver") {
    const transport = Deno.args[1] as Transport;
    if (!TRANSPORTS.includes(transport)) throw new TypeError(`unknown transport ${transport}`);
    console.log(JSON.stringify(await streamOnce(transport, Number(Deno.args[2]))));
  } else {
    const against = Deno.args.indexOf("--against");
    const other = against === -1 ? undefined : Deno.args[against + 1];
    const [mibArg, roundsArg] = Deno.args.filter((_, i) => against === -1 || i < against);
    const mib = Number(mibArg ?? 1024);
    const rounds = Number(roundsArg ?? 3);
    // A case: a transport, run by this module or by DIR's (every one but `bare`).
    const cases = TRANSPORTS.flatMap((transport) => [
      { transport, label: transport as string, module: import.meta.filename! },
      ...(other === undefined || transport === "bare" ? [] : [{
        transport,
        label: `${transport} @${other}`,
        module: `${other}/bench/stream_memory.ts`,
      }]),
    ]);
    const runs = new Map<string, StreamMemoryRun[]>(cases.map((c) => [c.label, []]));
    for (let round = 0; round < rounds; round++) {
      // Alternate which case goes first, so neither always runs on a cooler machine.
      const order = round % 2 === 0 ? cases : cases.toReversed();
      for (const { transport, label, module } of order) {
        const run = await runFresh<StreamMemoryRun>(module, ["--driver", transport, String(mib)]);
        runs.get(label)!.push(run);
        console.error(JSON.stringify({ ...run, transport: label }));
      }
    }
    console.log(`${mib} MiB of 1 MiB items, ${rounds} rounds: median (min–max)`);
    console.log(
      "| transport | MB/s | CPU ms/GiB | peak RSS growth MiB | sampled rss | heapUsed | external |",
    );
    console.log("| --- | --- | --- | --- | --- | --- | --- |");
    for (const [label, list] of runs) {
      console.log(
        `| ${label} | ${range(list.map((r) => r.mbps), 0)} | ${
          range(list.map((r) => r.cpuMsPerGiB), 0)
        } | ${range(list.map((r) => r.peakRssGrowthMiB), 1)} | ${
          range(list.map((r) => r.sampled.rss), 1)
        } | ${range(list.map((r) => r.sampled.heapUsed), 1)} | ${
          range(list.map((r) => r.sampled.external), 1)
        } |`,
      );
    }
    if (other !== undefined) {
      console.log(`\nthis tree ÷ ${other}, median (min–max) of the per-round ratios:`);
      for (const transport of TRANSPORTS.filter((t) => t !== "bare")) {
        const mine = runs.get(transport)!;
        const theirs = runs.get(`${transport} @${other}`)!;
        const ratio = (of: (run: StreamMemoryRun) => number) =>
          range(mine.map((run, i) => of(run) / of(theirs[i])), 2);
        console.log(
          `${transport}: MB/s ${ratio((r) => r.mbps)}, CPU ms/GiB ${
            ratio((r) => r.cpuMsPerGiB)
          }, peak RSS growth ${ratio((r) => r.peakRssGrowthMiB)}`,
        );
      }
    }
  }
}
