// The Node peer of the report's "Node peers" section, run by a real `node` (never Deno's Node
// layer): forks node_rows_echo.mjs with `child_process.fork` IPC in the serialization mode
// given, measures the rows of bench/report/_node_rows.ts and prints them as one JSON line.
//
//   node bench/report/children/node_rows.mjs json|advanced <budget ms> <payload.json>
//
// The rows, the same as conduit's (children/conduit_rows.ts):
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

const [serialization, budgetArg, payloadPath] = process.argv.slice(2);
const budgetMs = Number(budgetArg);
const structured = JSON.parse(readFileSync(payloadPath, "utf8"));
const structuredBytes = Buffer.byteLength(JSON.stringify(structured));
const SMALL = { id: 42, method: "users.get", params: { userId: 1234567, fields: ["name"] } };
const RAW_BYTES = 64 * 1024;
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

const structuredRun = await perSecond(() => call(structured));
const rawRun = await perSecond(echoRaw);
const pipelinedRun = await perSecond(() =>
  Promise.all(Array.from({ length: 32 }, () => call(SMALL)))
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
child.disconnect();
await new Promise((resolve) => child.once("exit", resolve));
process.stdout.write(JSON.stringify(result) + "\n");

/**
 * Runs `op` one at a time for a fifth of the budget (warm-up), then for the budget: ops/s,
 * and the CPU µs both processes used per op.
 */
async function perSecond(op) {
  for (const ms of [budgetMs / 5, budgetMs]) {
    let count = 0;
    const cpu0 = cpuMs(process.pid) + cpuMs(child.pid);
    const t0 = performance.now();
    let elapsed = 0;
    while (elapsed < ms) {
      await op();
      count++;
      elapsed = performance.now() - t0;
    }
    const cpu = cpuMs(process.pid) + cpuMs(child.pid) - cpu0;
    if (ms === budgetMs) return { perSec: count / (elapsed / 1000), cpuUs: cpu * 1000 / count };
  }
}

/** The CPU time a process has used (all its threads, user + system), in ms. */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // After the command in parentheses: field 3 (state) onwards; utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10; // 100 clock ticks a second
}
