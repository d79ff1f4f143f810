// Spawn-to-first-reply of a thread worker (spawnWorker(…, { thread: true })) against a process
// worker, in the same run: interleaved rounds (the order alternating), each spawning
// bench/_ping_worker.ts both ways and timing until the answer to its first call (start, module
// load, handshake, one round trip), then closing it. A first spawn of each is run and dropped
// (it loads conduit's lazily imported modules into this process).
//
//   deno run -A bench/thread_spawn_time.ts [--rounds 20]

import { parseArgs } from "node:util";
import { workerFirstReply } from "./_first_reply.ts";

const KINDS = { process: { thread: false }, thread: { thread: true } } as const;
type Kind = keyof typeof KINDS;

const rounds = Number(
  parseArgs({ args: Deno.args, options: { rounds: { type: "string", default: "20" } } }).values
    .rounds,
);
const samples: Record<Kind, number[]> = { process: [], thread: [] };
for (const kind of ["process", "thread"] as const) await workerFirstReply(KINDS[kind]);
for (let round = 0; round < rounds; round++) {
  const order: Kind[] = round % 2 === 0 ? ["process", "thread"] : ["thread", "process"];
  for (const kind of order) samples[kind].push(await workerFirstReply(KINDS[kind]));
}

const median = (values: number[]) => values.toSorted((a, b) => a - b)[values.length >> 1];
console.log(
  `spawn-to-first-reply, Deno ${Deno.version.deno}, ${rounds} interleaved rounds, ` +
    `load ${Deno.loadavg().map((n) => n.toFixed(1)).join(" ")}`,
);
for (const kind of ["process", "thread"] as const) {
  const values = samples[kind];
  console.log(
    `${kind.padEnd(7)} median ${median(values).toFixed(1)} ms ` +
      `(${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)})`,
  );
}
console.log(`thread / process: ${(median(samples.thread) / median(samples.process)).toFixed(2)}`);
