// Issue 12's start-up target: spawn-to-first-reply of a worker, as a same-run ratio against
// a bare Deno child. Interleaved rounds; in each:
//   - bare:   spawn `deno eval` of a one-line program, until its first byte on stdout;
//   - worker: spawnWorker(bench/_ping_worker.ts) with default options, until the answer to
//             its first call (process start, module load, handshake, one round trip);
//   - fresh:  a new parent process (this file with --fresh) that times its own first
//             spawnWorker the same way, and its own first bare child, and prints both: the
//             first spawn pays for everything the parent loads lazily.
// Targets: worker median <= 25 ms and <= 2x bare; fresh <= 35 ms.
//
//   deno run -A bench/spawn_time.ts [--rounds 20]

import { parseArgs } from "node:util";
import { bareFirstByte as bare } from "./_bare_deno.ts";
import { workerFirstReply as worker } from "./_first_reply.ts";

/** Runs this file as a fresh parent: its first worker spawn and first bare spawn, in ms. */
async function fresh(): Promise<{ worker: number; bare: number }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-run", "--allow-read", import.meta.filename!, "--fresh"],
    stderr: "inherit",
  }).output();
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

const args = parseArgs({
  args: Deno.args,
  options: { rounds: { type: "string", default: "20" }, fresh: { type: "boolean" } },
}).values;

if (args.fresh) {
  // The worker first: it must not profit from anything the bare spawn loaded.
  const first = await worker();
  console.log(JSON.stringify({ worker: first, bare: await bare() }));
} else {
  const samples = { bare: [] as number[], worker: [] as number[], fresh: [] as number[] };
  const freshBare: number[] = [];
  await bare();
  await worker();
  for (let round = 0; round < Number(args.rounds); round++) {
    samples.bare.push(await bare());
    samples.worker.push(await worker());
    const first = await fresh();
    samples.fresh.push(first.worker);
    freshBare.push(first.bare);
  }
  const median = (values: number[]) => values.toSorted((a, b) => a - b)[values.length >> 1];
  const bareMedian = median(samples.bare);
  console.log(
    `spawn-to-first-reply, Deno ${Deno.version.deno}, ${args.rounds} interleaved rounds, ` +
      `load ${Deno.loadavg()[0].toFixed(1)}`,
  );
  for (const [name, values] of Object.entries(samples)) {
    const m = median(values);
    console.log(
      `${name.padEnd(7)} median ${m.toFixed(1)} ms  min ${Math.min(...values).toFixed(1)} ms  ` +
        `${(m / bareMedian).toFixed(2)}x bare`,
    );
  }
  console.log(
    `(a fresh parent's own bare spawn, after its worker: median ${
      median(freshBare).toFixed(1)
    } ms)`,
  );
}
