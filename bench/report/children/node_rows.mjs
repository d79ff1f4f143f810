// The Node peer of the report's "Node peers" section, run by a real `node` (never Deno's Node
// layer): forks node_rows_echo.mjs with `child_process.fork` IPC in the serialization mode
// given, measures the rows of bench/report/_node_rows.ts and prints them as one JSON line.
//
//   node bench/report/children/node_rows.mjs json|advanced <budget ms> <payload.json> [warm-up calls]
//
// The rows, the same as conduit's (children/conduit_rows.ts, timed by _rows_common.mjs):
// - spawnMs: fork() → the first reply;
// - structuredMBps: sequential echo calls of the ~1 KB object, MB/s of its JSON bytes;
// - rawMBps: sequential echo calls of 64 KiB of bytes, MB/s of those bytes. With "advanced"
//   a Buffer crosses as bytes; "json" cannot carry bytes, so they cross as a base64 string
//   (what a JSON user sends), encoded and decoded by the parent;
// - pipelinedCallsPerSec: 32 small calls in flight at a time (Promise.all), calls/s;
// - structuredCpuUs, rawCpuUs, pipelinedCpuUs: the CPU time both processes used per call in
//   those rows (user + system, from /proc/<pid>/stat), which other load disturbs far less.

import { fork } from "node:child_process";
import { readFileSync } from "node:fs";
import process from "node:process";
import { measureRows, RAW_BYTES, SMALL } from "./_rows_common.mjs";

const [serialization, budgetArg, payloadPath, warmUpArg] = process.argv.slice(2);
const structured = JSON.parse(readFileSync(payloadPath, "utf8"));
const raw = Buffer.alloc(RAW_BYTES, 0x5a);

const started = performance.now();
const child = fork(new URL("./node_rows_echo.mjs", import.meta.url), [], {
  serialization,
  stdio: ["ignore", "ignore", "inherit", "ipc"],
});
const pending = new Map();
let nextId = 0;
child.on("message", (message) => {
  const resolve = pending.get(message.id);
  pending.delete(message.id);
  resolve(message.p);
});
const call = (p) =>
  new Promise((resolve) => {
    const id = ++nextId;
    pending.set(id, resolve);
    child.send({ id, p });
  });

await call(0);
const spawnMs = performance.now() - started;

const echoRaw = serialization === "json"
  ? async () => {
    const back = Buffer.from(await call(raw.toString("base64")), "base64");
    if (back.length !== RAW_BYTES) throw new Error("raw echo lost bytes");
  }
  : async () => {
    const back = await call(raw);
    if (back.length !== RAW_BYTES) throw new Error("raw echo lost bytes");
  };

const rows = await measureRows({
  budgetMs: Number(budgetArg),
  warmUpOps: Number(warmUpArg ?? 1000),
  structuredBytes: Buffer.byteLength(JSON.stringify(structured)),
  structuredPid: child.pid,
  rawPid: child.pid,
  echoStructured: () => call(structured),
  echoRaw,
  echoSmall: () => call(SMALL),
});
child.disconnect();
await new Promise((resolve) => child.once("exit", resolve));
process.stdout.write(JSON.stringify({ spawnMs, ...rows }) + "\n");
