// One-way raw 64 B notifications per second from parent to child, over stdio with several pipe
// buffer sizes and over a Unix socket, driven as the report drives them (`notesPerSecond`:
// windows of 8192 notes, at most two counts pending), the variants interleaved run by run:
//
//   deno run -A bench/stdio_notes.ts [--runs 7] [--notes 1000000] [--warmup 100000]
//     [--pipes 0,262144,1048576]
//
// `stdio 0` is the OS default pipe (64 KiB); other sizes are `pipeBufferBytes` on both sides.
// Besides the rate it prints, per 1,000 notes, the context switches of each main thread (the
// JavaScript thread; /proc/<pid>/task/<pid>/schedstat): a figure the machine's load hardly
// moves, unlike the rate, and the paired ratio of each variant to the Unix socket.

import { methodCodecsFor, type TransportName } from "./report/_bench_api.ts";
import { conduitClient } from "./report/_clients.ts";
import { notesPerSecond } from "./report/_measure.ts";
import { rawNote } from "./report/_payloads.ts";
import { type Peer, spawnPeer } from "./report/_peers.ts";
import { spread } from "./report/_stats.ts";
import { serveBench } from "./report/children/conduit_peer.ts";
import { spawnTransport, stdioTransport } from "../transports/stdio.ts";
import { resizePipes } from "../transports/_pipe_buffer.ts";

const SELF = new URL(import.meta.url).pathname;
const PEER = new URL("./report/children/conduit_peer.ts", import.meta.url);
const WINDOW = 8192;

if (Deno.args[0] === "--peer") {
  const channel = await serveBench(
    stdioTransport({ pipeBufferBytes: Number(Deno.args[1]) }),
    "raw",
  );
  await channel.closed.catch(() => {});
} else {
  await main();
}

async function main(): Promise<void> {
  const runs = Number(flag("--runs") ?? 7);
  const notes = Number(flag("--notes") ?? 1_000_000);
  const warmup = Number(flag("--warmup") ?? 100_000);
  const pipes = (flag("--pipes") ?? "0,262144,1048576").split(",").map(Number);
  const variants = ["unix", ...pipes.map((bytes) => `stdio ${bytes}`)];
  const socketDir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cdn" });
  const { methodCodecs } = await methodCodecsFor("raw");
  const rates = new Map<string, number[]>();
  const switches = new Map<string, [number[], number[]]>();
  for (let run = 0; run < runs; run++) {
    for (const variant of variants) {
      const [kind, bytes] = variant.split(" ");
      const peer = kind === "stdio"
        ? stdioPeer(Number(bytes))
        : await spawnPeer(kind as TransportName, PEER, ["raw"], socketDir);
      const client = await conduitClient(peer, methodCodecs);
      if (warmup > 0) await notesPerSecond(client, rawNote(), warmup, WINDOW);
      if (kind === "stdio" && run === 0) {
        const sizes = resizePipes([`/proc/${peer.pid}/fd/0`, `/proc/${peer.pid}/fd/1`], 0);
        console.log(`${variant}: the child's stdin and stdout pipes hold ${sizes} bytes`);
      }
      const before = [contextSwitches(Deno.pid), contextSwitches(peer.pid)];
      const rate = await notesPerSecond(client, rawNote(), notes, WINDOW);
      const after = [contextSwitches(Deno.pid), contextSwitches(peer.pid)];
      await client.close();
      push(rates, variant, rate);
      const [ours, theirs] = switches.get(variant) ?? [[], []];
      ours.push((after[0] - before[0]) / notes * 1000);
      theirs.push((after[1] - before[1]) / notes * 1000);
      switches.set(variant, [ours, theirs]);
    }
  }
  await Deno.remove(socketDir, { recursive: true });
  const unix = rates.get("unix")!;
  console.log(`${notes} raw 64 B notifications, parent -> child, median of ${runs} runs`);
  console.log("variant         notes/s   vs unix  switches/1k notes (driver, peer)   runs");
  for (const variant of variants) {
    const figures = rates.get(variant)!;
    const [ours, theirs] = switches.get(variant)!;
    console.log(
      `${variant.padEnd(14)} ${(median(figures) / 1e3).toFixed(0).padStart(6)}k` +
        `   ${median(figures.map((rate, i) => rate / unix[i])).toFixed(2).padStart(6)}` +
        `   ${median(ours).toFixed(2).padStart(8)} ${median(theirs).toFixed(2).padStart(6)}` +
        `                   ${figures.map((rate) => (rate / 1e3).toFixed(0)).join(" ")}`,
    );
  }
}

/** A child serving the report's API over its stdio, both sides asking for `bytes` pipes. */
function stdioPeer(bytes: number): Peer {
  const child = spawnTransport(Deno.execPath(), {
    args: ["run", "-A", SELF, "--peer", String(bytes)],
    pipeBufferBytes: bytes,
  });
  return { transport: child, pid: child.pid, status: child.status, close: () => child.close() };
}

/** How many times process `pid`'s main thread was put on a CPU: one per context switch into it
 * (the third field of schedstat, its run count). */
function contextSwitches(pid: number): number {
  return Number(Deno.readTextFileSync(`/proc/${pid}/task/${pid}/schedstat`).split(" ")[2]);
}

function push(map: Map<string, number[]>, key: string, value: number): void {
  map.set(key, [...map.get(key) ?? [], value]);
}

/** The report's median: the mean of the middle two for an even count of runs. */
function median(values: number[]): number {
  return spread(values)?.median ?? NaN;
}

function flag(name: string): string | undefined {
  const at = Deno.args.indexOf(name);
  return at >= 0 ? Deno.args[at + 1] : undefined;
}
