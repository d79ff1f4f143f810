// Spawn-to-first-reply of a thread worker (spawnWorker(…, { thread: true })) against a process
// worker, in the same run: interleaved rounds, each spawning bench/_ping_worker.ts both ways
// and timing until the answer to its first call (start, module load, handshake, one round
// trip), then closing it. A first round of each is run and dropped (it loads conduit's
// lazily imported modules into this process). Also the close() time of each.
//
//   deno run -A bench/thread_spawn_time.ts [--rounds 20]

import { parseArgs } from "node:util";
import { spawnWorker } from "@conduit/ipc/workers";
import type { PingApi } from "./_ping_worker.ts";

const WORKER = new URL("./_ping_worker.ts", import.meta.url);

/** Spawns the ping worker; the times to its first reply and to the end of close(), in ms. */
async function spawnToFirstReply(thread: boolean): Promise<[number, number]> {
  const started = performance.now();
  const handle = await spawnWorker<PingApi>(WORKER, { thread });
  await handle.remote.ping();
  const replied = performance.now();
  await handle.close();
  return [replied - started, performance.now() - replied];
}

const rounds = Number(
  parseArgs({ args: Deno.args, options: { rounds: { type: "string", default: "20" } } }).values
    .rounds,
);
const samples = { process: [] as number[], thread: [] as number[] };
const closes = { process: [] as number[], thread: [] as number[] };
await spawnToFirstReply(false);
await spawnToFirstReply(true);
for (let round = 0; round < rounds; round++) {
  for (
    const kind of round % 2 === 0 ? ["process", "thread"] as const : ["thread", "process"] as const
  ) {
    const [first, close] = await spawnToFirstReply(kind === "thread");
    samples[kind].push(first);
    closes[kind].push(close);
  }
}

const median = (values: number[]) => values.toSorted((a, b) => a - b)[values.length >> 1];
const range = (values: number[]) =>
  `${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`;
console.log(
  `spawn-to-first-reply, Deno ${Deno.version.deno}, ${rounds} interleaved rounds, ` +
    `load ${Deno.loadavg().map((n) => n.toFixed(1)).join(" ")}`,
);
for (const kind of ["process", "thread"] as const) {
  console.log(
    `${kind.padEnd(7)} median ${median(samples[kind]).toFixed(1)} ms (${range(samples[kind])})` +
      `  close ${median(closes[kind]).toFixed(1)} ms (${range(closes[kind])})`,
  );
}
console.log(
  `thread / process: ${(median(samples.thread) / median(samples.process)).toFixed(2)}`,
);
