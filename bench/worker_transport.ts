// Issue 12 research, "stdout can't corrupt the channel": a worker's channel over
//   (a) stdio      the child's stdin/stdout (today's default),
//   (b) unix       a Unix socket the parent listens on, its path in CONDUIT_WORKER_SOCKET,
//   (c) quiet      stdio, with bench/_quiet_stdio_preload.ts run first (`deno run --preload`),
//                  which moves console and Deno.stdout to stderr before the user's module loads.
// Same run, interleaved, a fresh worker process per measurement round. Per round and option:
// spawn-to-first-reply, the p50 of 500 sequential small calls, and 16 echo calls of a 1 MiB
// Uint8Array (MB/s of payload carried each way). The structured codec on both sides.
//
//   deno run -A bench/worker_transport.ts [--rounds 7]

import { parseArgs } from "node:util";
import { structuredCodec } from "@conduit/ipc/codecs/structured";
import { spawnWorker, type WorkerHandle } from "@conduit/ipc/workers";
import type { PrintRoute, TransportWorkerApi } from "./_transport_worker.ts";

const rounds = Number(
  parseArgs({ args: Deno.args, options: { rounds: { type: "string" } } })
    .values.rounds ?? 7,
);
const WORKER = new URL("./_transport_worker.ts", import.meta.url);
const PRELOAD = new URL("./_quiet_stdio_preload.ts", import.meta.url);
const OPTIONS = ["stdio", "unix", "quiet"] as const;
type Option = typeof OPTIONS[number];

const SMALL = { id: 42, method: "users.get", params: { userId: 1234567, fields: ["name"] } };
const BIG = new Uint8Array(1 << 20).fill(0x5a);

function spawn(option: Option, args: string[] = []): Promise<WorkerHandle<TransportWorkerApi>> {
  const codec = structuredCodec();
  const stderr = "discard" as const;
  const permissions = { run: ["echo"] }; // the "subprocess" route
  if (option === "quiet") {
    return spawnWorker<TransportWorkerApi>(WORKER, {
      codec,
      args,
      stderr,
      permissions,
      denoArgs: ["--preload", PRELOAD.href],
    });
  }
  return spawnWorker<TransportWorkerApi>(WORKER, {
    codec,
    args,
    stderr,
    permissions,
    transport: option,
  });
}

// First, what a worker printing to stdout does to each: a console.log at load (with the
// first route), then a handler writing by one route.
const ROUTES: PrintRoute[] = ["console and Deno.stdout", "node:process", "subprocess"];
for (const option of OPTIONS) {
  for (const [i, how] of ROUTES.entries()) {
    let outcome: string;
    try {
      const worker = await spawn(option, i === 0 ? ["--noisy"] : []);
      try {
        await worker.remote.print({ text: "hello from a handler", how });
        outcome = (await worker.remote.echo(7)) === 7 ? "calls keep working" : "wrong reply";
      } finally {
        await worker.close().catch(() => {});
      }
    } catch (error) {
      const cause = (error as Error).cause as Error | undefined;
      outcome = `fails: ${(error as Error).name}` + (cause ? ` (cause: ${cause.message})` : "");
    }
    console.log(`stdout writes, ${option}, ${i === 0 ? "at load and " : ""}${how}: ${outcome}`);
  }
}

const samples: Record<Option, { spawn: number[]; small: number[]; big: number[] }> = {
  stdio: { spawn: [], small: [], big: [] },
  unix: { spawn: [], small: [], big: [] },
  quiet: { spawn: [], small: [], big: [] },
};

for (let round = 0; round < rounds; round++) {
  // Rotate the order so that no option always runs first (or right after a teardown).
  const order = OPTIONS.map((_, i) => OPTIONS[(i + round) % OPTIONS.length]);
  for (const option of order) {
    const t0 = performance.now();
    const worker = await spawn(option);
    await worker.remote.echo(1);
    samples[option].spawn.push(performance.now() - t0);
    const times: number[] = [];
    for (let i = 0; i < 500; i++) {
      const t = performance.now();
      await worker.remote.echo(SMALL);
      times.push(performance.now() - t);
    }
    samples[option].small.push(median(times));
    const tBig = performance.now();
    for (let i = 0; i < 16; i++) {
      const back = await worker.remote.echo(BIG) as Uint8Array;
      if (back.length !== BIG.length) throw new Error(`${option}: echo lost bytes`);
    }
    samples[option].big.push(16 * BIG.length / 1e6 / ((performance.now() - tBig) / 1000));
    await worker.close();
  }
}

console.log(
  `worker transports, Deno ${Deno.version.deno}, ${rounds} fresh workers each, interleaved`,
);
console.log(
  "option | spawn-to-first-reply p50 (ms) | small call p50 (µs) | 1 MiB echo (MB/s, median)",
);
for (const option of OPTIONS) {
  const s = samples[option];
  console.log(
    `${option.padEnd(5)} | ${median(s.spawn).toFixed(1)} (min ${Math.min(...s.spawn).toFixed(1)})` +
      ` | ${(median(s.small) * 1000).toFixed(0)} | ${median(s.big).toFixed(0)}`,
  );
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
