// What the two parents of the report's "Node peers" section share, so that both time their
// rows the same way: children/node_rows.mjs (run by Node) and children/conduit_rows.ts (run by
// Deno) both import it.

import { readdirSync, readFileSync } from "node:fs";

/** The small call of the pipelined row. */
export const SMALL = { id: 42, method: "users.get", params: { userId: 1234567, fields: ["name"] } };
/** The raw row's payload size. */
export const RAW_BYTES = 64 * 1024;

/**
 * Measures the three rate rows: `echoStructured`, `echoRaw` and `echoSmall` each run one call
 * at a time (the pipelined row: 32 small calls at a time) for half of `budgetMs` and at least
 * `warmUpOps` operations as warm-up, then for `budgetMs`. CPU per call counts our process and the peer's (`structuredPid` for the
 * structured and pipelined rows, `rawPid` for the raw one).
 *
 * @param {{
 *   budgetMs: number,
 *   warmUpOps: number,
 *   structuredBytes: number,
 *   structuredPid: number,
 *   rawPid: number,
 *   echoStructured: () => Promise<unknown>,
 *   echoRaw: () => Promise<unknown>,
 *   echoSmall: () => Promise<unknown>,
 * }} rows
 * @returns {Promise<Record<string, number>>} The rows, as the section's `RowFigures` minus `spawnMs`.
 */
export async function measureRows(rows) {
  const { structuredBytes } = rows;
  const structured = await perSecond(rows, rows.structuredPid, rows.echoStructured);
  const raw = await perSecond(rows, rows.rawPid, rows.echoRaw);
  const pipelined = await perSecond(
    rows,
    rows.structuredPid,
    () => Promise.all(Array.from({ length: 32 }, rows.echoSmall)),
  );
  return {
    structuredMBps: structured.perSec * structuredBytes / 1e6,
    rawMBps: raw.perSec * RAW_BYTES / 1e6,
    pipelinedCallsPerSec: 32 * pipelined.perSec,
    structuredCpuUs: structured.cpuUs,
    rawCpuUs: raw.cpuUs,
    pipelinedCpuUs: pipelined.cpuUs / 32,
    // Context switches of both processes per call (not in the report's tables yet).
    structuredSwitches: structured.switchesPerOp,
    rawSwitches: raw.switchesPerOp,
    pipelinedSwitches: pipelined.switchesPerOp / 32,
  };
}

/** Warm-up before each row: this share of the budget, and at least `warmUpOps` operations. */
const WARM_UP_FRACTION = 0.5;

async function perSecond({ budgetMs, warmUpOps }, pid, op) {
  // JIT-compiled code paths (a JavaScript codec) need more calls than native JSON to reach
  // their steady state: a fifth of 400 ms was 160 calls, and CPU per call came out 3x higher.
  const [, warmed] = await runFor(op, budgetMs * WARM_UP_FRACTION);
  for (let i = warmed; i < warmUpOps; i++) await op();
  const cpu0 = cpuMs(process.pid) + cpuMs(pid);
  const switches0 = switches(process.pid) + switches(pid);
  const [perSec, count] = await runFor(op, budgetMs);
  const cpu = cpuMs(process.pid) + cpuMs(pid) - cpu0;
  const switched = switches(process.pid) + switches(pid) - switches0;
  return { perSec, cpuUs: cpu * 1000 / count, switchesPerOp: switched / count };
}

async function runFor(op, ms) {
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

/**
 * The context switches of all of a process's threads so far (voluntary: it waited, for a
 * read or a lock; involuntary: preempted): each voluntary one is a sleep and a wake-up.
 */
function switches(pid) {
  let total = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const status = readFileSync(`/proc/${pid}/task/${task}/status`, "utf8");
      for (const match of status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)$/gm)) {
        total += Number(match[1]);
      }
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return total;
}

/** The CPU time a process has used (all its threads, user + system), in ms. */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // After the command in parentheses: field 3 (state) onwards; utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10; // 100 clock ticks a second
}
