// conduit's side of the report's "Node peers" section: spawns a worker of
// conduit_rows_worker.ts over the transport given ("default": spawnWorker's default), measures
// the rows node_rows.mjs measures for Node fork IPC, and prints them as one JSON line. The
// raw row has a worker of its own (the raw codec); spawn → first reply is the structured one.
//
//   deno run -A bench/report/children/conduit_rows.ts default|unix <budget ms> <payload.json>

import { rawCodec } from "../../../codecs/raw.ts";
import { structuredCodec } from "../../../codecs/structured.ts";
import { spawnWorker, type SpawnWorkerOptions } from "../../../workers/spawn_worker.ts";
import type { RowsWorkerApi } from "./conduit_rows_worker.ts";

const [transport, budgetArg, payloadPath] = Deno.args;
const budgetMs = Number(budgetArg);
const structured = JSON.parse(await Deno.readTextFile(payloadPath));
const structuredBytes = new TextEncoder().encode(JSON.stringify(structured)).length;
const SMALL = { id: 42, method: "users.get", params: { userId: 1234567, fields: ["name"] } };
const RAW_BYTES = 64 * 1024;
const raw = new Uint8Array(RAW_BYTES).fill(0x5a);
const WORKER = new URL("./conduit_rows_worker.ts", import.meta.url);

const base: SpawnWorkerOptions = {
  stderr: "discard",
  ...(transport === "default" ? {} : { transport: transport as "unix" }),
};

const started = performance.now();
const worker = await spawnWorker<RowsWorkerApi>(WORKER, { ...base, codec: structuredCodec() });
await worker.remote.echo(0);
const spawnMs = performance.now() - started;
const rawWorker = await spawnWorker<RowsWorkerApi>(WORKER, {
  ...base,
  codec: rawCodec(),
  args: ["--raw"],
});
// Up and answering before anything is timed: its start-up would share the CPUs with the rows.
await rawWorker.remote.echo(new Uint8Array(1));

const echoRaw = async () => {
  const back = await rawWorker.remote.echo(raw) as Uint8Array;
  if (back.length !== RAW_BYTES) throw new Error("raw echo lost bytes");
};
const structuredRun = await perSecond(worker.pid, () => worker.remote.echo(structured));
const rawRun = await perSecond(rawWorker.pid, echoRaw);
const pipelinedRun = await perSecond(
  worker.pid,
  () => Promise.all(Array.from({ length: 32 }, () => worker.remote.echo(SMALL))),
);
const result = {
  spawnMs,
  structuredMBps: structuredRun.perSec * structuredBytes / 1e6,
  rawMBps: rawRun.perSec * RAW_BYTES / 1e6,
  pipelinedCallsPerSec: 32 * pipelinedRun.perSec,
  structuredCpuUs: structuredRun.cpuUs,
  rawCpuUs: rawRun.cpuUs,
  pipelinedCpuUs: pipelinedRun.cpuUs / 32,
};
await Promise.all([worker.close(), rawWorker.close()]);
console.log(JSON.stringify(result));

/**
 * Runs `op` one at a time for a fifth of the budget (warm-up), then for the budget: ops/s,
 * and the CPU µs both processes (we and the worker `pid`) used per op.
 */
async function perSecond(
  pid: number,
  op: () => Promise<unknown>,
): Promise<{ perSec: number; cpuUs: number }> {
  await runFor(op, budgetMs / 5);
  const cpu0 = cpuMs(Deno.pid) + cpuMs(pid);
  const [perSec, count] = await runFor(op, budgetMs);
  const cpu = cpuMs(Deno.pid) + cpuMs(pid) - cpu0;
  return { perSec, cpuUs: cpu * 1000 / count };
}

async function runFor(op: () => Promise<unknown>, ms: number): Promise<[number, number]> {
  let count = 0;
  const t0 = performance.now();
  let elapsed = 0;
  while (elapsed < ms) {
    await op();
    count++;
    elapsed = performance.now() - t0;
  }
  return [count / (elapsed / 1000), count];
}

/** The CPU time a process has used (all its threads, user + system), in ms. */
function cpuMs(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  // After the command in parentheses: field 3 (state) onwards; utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10; // 100 clock ticks a second
}
