// Issue 12's start-up targets (and the spawn row of issue 16): spawn-to-first-reply of a
// worker, absolute and as a same-run ratio against a bare Deno child. Interleaved rounds; in
// each:
//   - bare:   spawn `deno eval` of a one-line program, until its first byte on stdout;
//   - worker: spawnWorker(bench/_ping_worker.ts) with default options, until the answer to
//             its first call (process start, module load, handshake, one round trip); the
//             worker imports serveWorker from `@conduit/ipc/workers/serve`, as the README shows;
//   - worker (full entrypoint): the same worker importing `@conduit/ipc/workers`, which also
//             loads the parent's side (bench/_ping_worker_full.ts);
//   - fresh:  a new parent process (this file with --fresh) that times its own first
//             spawnWorker the same way, and its own first bare child, and prints both: the
//             first spawn pays for everything the parent loads lazily.
// The output ends with each target and whether this run met it.
//
//   deno run -A bench/spawn_time.ts [--rounds 20]

import { parseArgs } from "node:util";
import { bareFirstByte as bare } from "./_bare_deno.ts";
import { workerFirstReply as worker } from "./_first_reply.ts";

const FULL_WORKER = new URL("./_ping_worker_full.ts", import.meta.url);

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
  const samples = {
    bare: [] as number[],
    worker: [] as number[],
    "worker (full entrypoint)": [] as number[],
    fresh: [] as number[],
  };
  const freshBare: number[] = [];
  const loadBefore = Deno.loadavg();
  await bare();
  await worker();
  await worker({}, FULL_WORKER);
  for (let round = 0; round < Number(args.rounds); round++) {
    samples.bare.push(await bare());
    samples.worker.push(await worker());
    samples["worker (full entrypoint)"].push(await worker({}, FULL_WORKER));
    const first = await fresh();
    samples.fresh.push(first.worker);
    freshBare.push(first.bare);
  }
  const median = (values: number[]) => values.toSorted((a, b) => a - b)[values.length >> 1];
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  const load = (values: number[]) => values.map((value) => value.toFixed(2)).join(" ");
  // Each round's figure over the same round's bare spawn, then the median of those ratios:
  // a load swing between rounds then moves both sides of a ratio.
  const ratio = (values: number[]) => median(values.map((value, i) => value / samples.bare[i]));
  console.log(
    `spawn → first reply, Deno ${Deno.version.deno}, ${args.rounds} interleaved rounds, ` +
      `load average ${load(loadBefore)} before, ${load(Deno.loadavg())} after (1/5/15 min)`,
  );
  for (const [name, values] of Object.entries(samples)) {
    console.log(
      `${name.padEnd(25)} median ${ms(median(values)).padStart(8)}  min–max ` +
        `${Math.min(...values).toFixed(1)}–${ms(Math.max(...values))}  ` +
        `${ratio(values).toFixed(2)}x bare (median of the rounds' ratios)`,
    );
  }
  console.log(
    `(a fresh parent's own bare spawn, after its worker: median ${ms(median(freshBare))})`,
  );

  const bareMedian = median(samples.bare);
  const workerMedian = median(samples.worker);
  const workerRatio = ratio(samples.worker);
  const freshMedian = median(samples.fresh);
  const verdict = (met: boolean) => met ? "met" : "MISSED";
  console.log("targets:");
  console.log(
    `  issue 12: worker median ≤ 25 ms: ${ms(workerMedian)}, ${verdict(workerMedian <= 25)} ` +
      `(set when a bare child took 10–15 ms; here it takes ${ms(bareMedian)})`,
  );
  console.log(
    `  issue 12: worker ≤ 2x bare: ${workerRatio.toFixed(2)}x, ${verdict(workerRatio <= 2)}`,
  );
  console.log(
    `  issue 12: a fresh parent's first spawn ≤ 35 ms: ${ms(freshMedian)}, ` +
      verdict(freshMedian <= 35),
  );
  console.log(
    "  issue 16: spawn → first reply ≥ 1.2x faster than Node's child_process.fork: not " +
      "measured here; `deno task bench:report` measures it against real Node (Node peers)",
  );
}
