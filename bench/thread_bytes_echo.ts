// An 8 MiB Uint8Array echoed by a thread worker and by a process worker with default options
// (the structured codec), in the same run: interleaved rounds of ten echoes each, MiB/s both
// ways counted. Shows whether a thread's transferred frames beat a process's pipe when the
// codec copies the bytes anyway.
//
//   deno run -A bench/thread_bytes_echo.ts [--rounds 5]

import { parseArgs } from "node:util";
import { spawnWorker, type WorkerHandle } from "@conduit/ipc/workers";
import type { EchoApi } from "../examples/_echo_worker.ts";

const WORKER = new URL("../examples/_echo_worker.ts", import.meta.url);
const MIB = 8;
const ECHOES = 10;

const rounds = Number(
  parseArgs({ args: Deno.args, options: { rounds: { type: "string", default: "5" } } }).values
    .rounds,
);
const bytes = new Uint8Array(MIB << 20).fill(3);

/** MiB/s of `ECHOES` echoes of `bytes`, both ways counted. */
async function rate(worker: WorkerHandle<EchoApi>): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < ECHOES; i++) {
    const echoed = await worker.remote.echo(bytes) as Uint8Array;
    if (echoed.length !== bytes.length) throw new Error(`echoed ${echoed.length} bytes`);
  }
  return (2 * ECHOES * MIB) / ((performance.now() - started) / 1000);
}

await using thread = await spawnWorker<EchoApi>(WORKER, { thread: true });
await using process = await spawnWorker<EchoApi>(WORKER);
const workers = { process, thread };
const samples = { process: [] as number[], thread: [] as number[] };
for (const worker of Object.values(workers)) await rate(worker);
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? ["process", "thread"] as const : ["thread", "process"] as const;
  for (const kind of order) samples[kind].push(await rate(workers[kind]));
}

const median = (values: number[]) => values.toSorted((a, b) => a - b)[values.length >> 1];
console.log(
  `${MIB} MiB Uint8Array echo, structured codec, Deno ${Deno.version.deno}, ${rounds} rounds ` +
    `of ${ECHOES}, load ${Deno.loadavg().map((n) => n.toFixed(1)).join(" ")}`,
);
for (const [kind, values] of Object.entries(samples)) {
  console.log(
    `${kind.padEnd(7)} median ${median(values).toFixed(0)} MiB/s ` +
      `(${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)})`,
  );
}
