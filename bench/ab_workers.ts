// A/B of a worker's costs between two checkouts of conduit (say, the commit before a change,
// extracted with `git archive <rev> | tar -x -C /tmp/before`, and this tree):
//
//   deno run -A bench/ab_workers.ts /tmp/before . [--rounds 21]
//
// - spawn-to-first-reply, per transport: each sample is a fresh parent process (this script
//   with --child), alternating before/after, so both see the same load over the run;
// - ping p50 over stdio and a Unix socket: in one process, a worker of each tree, batches of
//   2,000 sequential calls alternated between the two.
// Each line gives the medians and after-vs-before (> 1: after is better), also as the median
// of the per-round ratios. On a shared machine single runs swing by ±20%: repeat them.

const PING_BATCH = 2_000;

interface SpawnTimes {
  stdio: number;
  unix: number;
}

if (Deno.args[0] === "--child") {
  console.log(JSON.stringify(await spawnTimes(Deno.args[1])));
} else {
  const [before, after] = Deno.args.slice(0, 2).map((dir) =>
    new URL(dir.endsWith("/") ? dir : `${dir}/`, `file://${Deno.cwd()}/`)
  );
  const roundsAt = Deno.args.indexOf("--rounds");
  const rounds = roundsAt > 0 ? Number(Deno.args[roundsAt + 1]) : 21;
  if (before === undefined || after === undefined || !(rounds > 0)) {
    console.error("usage: deno run -A bench/ab_workers.ts <before dir> <after dir> [--rounds N]");
    Deno.exit(2);
  }
  await compareSpawns(before.href, after.href, rounds);
  for (const transport of ["stdio", "unix"]) {
    await comparePings(before.href, after.href, rounds, transport);
  }
}

/** Spawn-to-first-reply of a worker of the tree at `root`, over each transport, in ms. */
async function spawnTimes(root: string): Promise<SpawnTimes> {
  const { spawnWorker } = await import(new URL("workers/spawn_worker.ts", root).href);
  const module = new URL("bench/_ping_worker.ts", root);
  const times = { stdio: 0, unix: 0 };
  for (const transport of ["stdio", "unix"] as const) {
    const started = performance.now();
    const worker = await spawnWorker(module, { transport });
    await worker.remote.ping();
    times[transport] = performance.now() - started;
    await worker.close();
  }
  return times;
}

async function compareSpawns(before: string, after: string, rounds: number): Promise<void> {
  const child = async (root: string): Promise<SpawnTimes> => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", import.meta.filename!, "--child", root],
      stderr: "inherit",
    }).output();
    if (!output.success) throw new Error(`the child for ${root} failed`);
    return JSON.parse(new TextDecoder().decode(output.stdout));
  };
  // Warm the module caches of both trees.
  await child(before);
  await child(after);
  const samples = { before: [] as SpawnTimes[], after: [] as SpawnTimes[] };
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 === 0 ? (["before", "after"] as const) : (["after", "before"] as const);
    for (const side of order) samples[side].push(await child(side === "before" ? before : after));
  }
  for (const transport of ["stdio", "unix"] as const) {
    report(
      `spawn-to-first-reply over ${transport} (ms, ${rounds} fresh processes each)`,
      samples.before.map((s) => s[transport]),
      samples.after.map((s) => s[transport]),
    );
  }
}

async function comparePings(
  before: string,
  after: string,
  rounds: number,
  transport: string,
): Promise<void> {
  const spawn = async (root: string) => {
    const { spawnWorker } = await import(new URL("workers/spawn_worker.ts", root).href);
    return await spawnWorker(new URL("bench/_ping_worker.ts", root), { transport });
  };
  const workers = [await spawn(before), await spawn(after)];
  const p50s: number[][] = [[], []];
  for (const worker of workers) await pingP50(worker.remote);
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 === 0 ? [0, 1] : [1, 0];
    for (const side of order) p50s[side].push(await pingP50(workers[side].remote));
  }
  await Promise.all(workers.map((worker) => worker.close()));
  report(
    `ping p50 over ${transport} (µs, ${rounds} alternated batches of ${PING_BATCH} calls)`,
    p50s[0],
    p50s[1],
  );
}

async function pingP50(remote: { ping(): Promise<unknown> }): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < PING_BATCH; i++) {
    const started = performance.now();
    await remote.ping();
    times.push(performance.now() - started);
  }
  return median(times) * 1000;
}

/**
 * Prints the medians of a lower-is-better figure, and the median of the per-round ratios
 * (each round's two samples were taken back to back, so a drifting load cancels out).
 */
function report(what: string, before: number[], after: number[]): void {
  const [b, a] = [median(before), median(after)];
  const paired = median(before.map((value, i) => value / after[i]));
  console.log(
    `${what}: before ${b.toFixed(1)}, after ${a.toFixed(1)}; after vs before: ${
      (b / a).toFixed(3)
    } of the medians, ${paired.toFixed(3)} paired (> 1: after is better)`,
  );
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
