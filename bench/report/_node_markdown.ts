// The "Node peers" section of the report: one table per workload, the subjects side by side
// with the ratio columns.

import { mbps, rate, sig, spreadOf, time, times } from "./_format.ts";
import {
  NODE_ROWS,
  NODE_SUBJECTS,
  type NodePeersResult,
  type NodeRow,
  PLACEMENTS,
} from "./_node_rows.ts";
import { spread } from "./_stats.ts";

/** The ratio every row aims at. */
export const NODE_TARGET = 1.2;

const ROW_TITLES: Record<NodeRow, string> = {
  structuredMBps: "Structured 1 KB echo, MB/s (sequential calls; the object's JSON bytes)",
  rawMBps: "Raw 64 KiB echo, MB/s (sequential calls)",
  pipelinedCallsPerSec: "32 pipelined small calls, calls/s",
  spawnMs: "Spawn → first reply, ms (lower is better)",
  structuredCpuUs: "Structured 1 KB echo: CPU µs per call, both processes (lower is better)",
  rawCpuUs: "Raw 64 KiB echo: CPU µs per call, both processes (lower is better)",
  pipelinedCpuUs: "32 pipelined small calls: CPU µs per call, both processes (lower is better)",
};
const FORMAT: Record<NodeRow, (x: number) => string> = {
  structuredMBps: mbps,
  rawMBps: mbps,
  pipelinedCallsPerSec: rate,
  spawnMs: time,
  structuredCpuUs: (us) => `${sig(us)} µs`,
  rawCpuUs: (us) => `${sig(us)} µs`,
  pipelinedCpuUs: (us) => `${sig(us)} µs`,
};

/** The section's Markdown lines. */
export function nodePeersMarkdown(result: NodePeersResult | undefined): string[] {
  const out = ["## Node peers", ""];
  if (result === undefined) {
    out.push("Not measured in this run.", "");
    return out;
  }
  if ("missing" in result.node) {
    out.push(
      `**No Node peers in this run**: ${result.node.missing}. conduit's own figures follow.`,
      "",
    );
  } else {
    out.push(
      `Real Node processes, Node ${result.node.version} (${result.node.source}): a Node parent ` +
        "forks a Node child (`child_process.fork`) and calls it over fork's IPC channel with " +
        '`serialization: "json"` and with `"advanced"` (`bench/report/children/node_rows.mjs`). ' +
        "conduit is a Deno parent with a `spawnWorker` worker on the default transport and on " +
        "a Unix socket, the structured codec (the raw codec for the raw row; " +
        "`bench/report/children/conduit_rows.ts`). Each round runs every subject as fresh " +
        "processes, in a rotating order, with both processes free and then with both pinned " +
        "to CPU 0 (`taskset -c 0`). A ratio is conduit ÷ the best Node mode of the same round " +
        "(for spawn and CPU: the best Node figure ÷ conduit's; above 1 conduit is ahead), then the " +
        `median of the ${result.rounds} rounds' ratios (min–max in brackets); target ` +
        `${times(NODE_TARGET)}. Measured ${result.date.slice(0, 16).replace("T", " ")} UTC, ` +
        `load average ${result.load} before the section (a 2-core machine shared with other ` +
        "work: rates swing between rounds, the CPU rows much less). Each throughput figure " +
        `runs ${result.budgetMs} ms after a warm-up of half that and at least ` +
        `${(result.warmUpOps ?? 1000).toLocaleString("en-US")} calls. ` +
        "Node's JSON mode cannot carry bytes: the raw row sends " +
        "them as base64 there, as a JSON user would. The CPU rows are the user + system time " +
        "both processes used per call during those rows (`/proc/<pid>/stat`, 10 ms ticks): " +
        "other processes' load disturbs them far less than the rates.",
      "",
    );
  }
  if (!result.pinned) out.push("`taskset` was missing: no pinned rounds.", "");
  const placements = PLACEMENTS.filter((placement) => result.figures[placement] !== undefined);
  const subjects = NODE_SUBJECTS.filter((subject) =>
    result.figures[placements[0]]?.[subject] !== undefined
  );
  const conduits = subjects.filter((subject) => subject.startsWith("conduit"));
  const hasRatios = placements.some((placement) => result.ratios[placement] !== undefined);
  for (const row of NODE_ROWS) {
    out.push(`### ${ROW_TITLES[row]}`, "");
    const ratioHeads = hasRatios ? conduits.map((subject) => `${subject} ÷ best Node`) : [];
    const head = ["CPUs", ...subjects, ...ratioHeads];
    out.push(`| ${head.join(" | ")} |`, `| ${head.map(() => "---").join(" | ")} |`);
    for (const placement of placements) {
      const figures = result.figures[placement]!;
      const cells = [placement === "free" ? "free" : "pinned to one"];
      for (const subject of subjects) {
        cells.push(spreadOf(spread(figures[subject][row]), FORMAT[row]));
      }
      for (const subject of hasRatios ? conduits : []) {
        const ratio = result.ratios[placement]?.[subject]?.[row];
        const text = spreadOf(ratio, times);
        cells.push(ratio !== undefined && ratio.median < NODE_TARGET ? `**${text}**` : text);
      }
      out.push(`| ${cells.join(" | ")} |`);
    }
    out.push("");
  }
  return out;
}
