// conduit's side of the report's "Node peers" section, run by Deno, or by Node for conduit's
// Node row (a Node parent with a Node worker): spawns a worker of
// conduit_rows_worker.ts over the transport given ("default": spawnWorker's default), measures
// the rows node_rows.mjs measures for Node fork IPC (timed by _rows_common.mjs), and prints
// them as one JSON line. The raw row has a worker of its own (the raw codec); spawn → first
// reply is the structured one's.
//
//   deno run -A bench/report/children/conduit_rows.ts default|stdio|unix <budget ms> <payload.json> [warm-up calls]
//   node bench/report/children/conduit_rows.ts default <budget ms> <payload.json> [warm-up calls]

import { rawCodec } from "../../../codecs/raw.ts";
import { structuredCodec } from "../../../codecs/structured.ts";
import { spawnWorker, type SpawnWorkerOptions } from "../../../workers/spawn_worker.ts";
import type { RowsWorkerApi } from "./conduit_rows_worker.ts";
import { measureRows, RAW_BYTES, SMALL } from "./_rows_common.mjs";
import { readFileSync } from "node:fs";
import process from "node:process";

const [transport, budgetArg, payloadPath, warmUpArg] = process.argv.slice(2);
const structured = JSON.parse(readFileSync(payloadPath, "utf8"));
const raw = new Uint8Array(RAW_BYTES).fill(0x5a);
const WORKER = new URL("./conduit_rows_worker.ts", import.meta.url);

const base: SpawnWorkerOptions = {
  stderr: "discard",
  ...(transport === "default" ? {} : { transport: transport as "stdio" | "unix" }),
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

const rows = await measureRows({
  budgetMs: Number(budgetArg),
  warmUpOps: Number(warmUpArg ?? 1000),
  structuredBytes: new TextEncoder().encode(JSON.stringify(structured)).length,
  structuredPid: worker.pid,
  rawPid: rawWorker.pid,
  echoStructured: () => worker.remote.echo(structured),
  echoRaw: async () => {
    const back = await rawWorker.remote.echo(raw) as Uint8Array;
    if (back.length !== RAW_BYTES) throw new Error("raw echo lost bytes");
  },
  echoSmall: () => worker.remote.echo(SMALL),
});
await Promise.all([worker.close(), rawWorker.close()]);
console.log(JSON.stringify({ spawnMs, ...rows }));
