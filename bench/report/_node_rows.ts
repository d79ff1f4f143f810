// The report's "Node peers" section: conduit against real Node processes talking over
// `child_process.fork` IPC (node parent, node child; serialization "json" and "advanced"),
// four rows each: structured 1 KB echo MB/s, raw 64 KiB echo MB/s, 32 pipelined small calls
// calls/s, spawn → first reply. Each round runs every subject as fresh processes (one parent
// per subject: children/conduit_rows.ts, children/node_rows.mjs), in a rotating order, once
// with both processes free and once with both pinned to CPU 0 (`taskset -c 0`; children
// inherit the affinity). A ratio is conduit ÷ the best Node mode of the same round (for spawn
// and CPU per call: the best Node figure ÷ conduit's, so > 1 is conduit ahead); the report
// gives the median of the per-round ratios with their min–max. The CPU rows (user + system
// time of both processes per call) are what other load disturbs least.

import type { ReportConfig } from "./_config.ts";
import { loadAverage } from "./_env.ts";
import { findNode, type NodeBinary } from "./_node.ts";
import { mbps, rate, roundsLine, sig, spreadOf, time, times } from "./_format.ts";
import { rotated } from "./_measure.ts";
import { reportPayloads } from "./_payloads.ts";
import { type Spread, spread } from "./_stats.ts";

/** The subjects, conduit's first. */
export const NODE_SUBJECTS = [
  "conduit default",
  "conduit stdio",
  "conduit node",
  "node json",
  "node advanced",
];
/** The oldest Node that builds conduit for its row (`stripTypeScriptTypes`, from 23.2). */
const CONDUIT_NODE = [23, 2];
const us = (x: number) => `${sig(x)} µs`;
/** What every subject measures: the table's title, how a figure prints, the target's name. */
const ROWS = {
  structuredMBps: [
    "Structured 1 KB echo, MB/s (sequential calls; the object's JSON bytes)",
    mbps,
    "Structured 1 KB echo MB/s",
  ],
  rawMBps: ["Raw 64 KiB echo, MB/s (sequential calls)", mbps, "Raw 64 KiB echo MB/s"],
  pipelinedCallsPerSec: ["32 pipelined small calls, calls/s", rate, "32 pipelined small calls/s"],
  spawnMs: ["Spawn → first reply, ms (lower is better)", time, "Spawn → first reply (speed)"],
  structuredCpuUs: ["Structured 1 KB echo: CPU µs per call, both processes (lower is better)", us],
  rawCpuUs: ["Raw 64 KiB echo: CPU µs per call, both processes (lower is better)", us],
  pipelinedCpuUs: [
    "32 pipelined small calls: CPU µs per call, both processes (lower is better)",
    us,
  ],
} as const;
export type NodeRow = keyof typeof ROWS;
export const NODE_ROWS = Object.keys(ROWS) as NodeRow[];

/** The rows that are targets, with their names. */
export const NODE_TARGET_ROWS = NODE_ROWS.flatMap((row) => {
  const name = (ROWS[row] as readonly unknown[])[2] as string | undefined;
  return name === undefined ? [] : [[row, name] as const];
});

/** Rows where less is better: times, and CPU µs per call (both processes). */
function lowerIsBetter(row: NodeRow): boolean {
  return row === "spawnMs" || row.endsWith("CpuUs");
}
export const PLACEMENTS = ["free", "pinned"] as const;
export type Placement = typeof PLACEMENTS[number];

/** Everything the section measured. */
export interface NodePeersResult {
  /** The Node that ran the peers (`node --version`) and where it came from; or why none. */
  node: { version: string; source: string } | { missing: string };
  rounds: number;
  budgetMs: number;
  /** The fewest warm-up calls before each row (absent from the first results: 1,000). */
  warmUpOps?: number;
  /** When the section ran, and the 1-, 5- and 15-minute load averages before it. */
  date: string;
  load: string;
  /** Whether `taskset` was there to pin (without it the pinned rounds are skipped). */
  pinned: boolean;
  /** placement → subject → row → figure per round. */
  figures: Partial<Record<Placement, Record<string, Record<NodeRow, number[]>>>>;
  /** placement → conduit subject → row → spread of the per-round ratios to the best Node. */
  ratios: Partial<Record<Placement, Record<string, Record<NodeRow, Spread | undefined>>>>;
}

const CHILDREN = new URL("./children/", import.meta.url);
const PAYLOAD_FILE = `/tmp/conduit-node-rows-${Deno.pid}.json`;

/** Runs the section: `rounds` rounds of every subject, free and pinned. */
export async function runNodePeers(
  { nodeRounds: rounds, nodeBudgetMs: budgetMs, nodeWarmUpOps: warmUpOps }: ReportConfig,
  log: (line: string) => void,
): Promise<NodePeersResult> {
  const node = await findNode();
  const pinned = await hasTaskset();
  const result: NodePeersResult = {
    node: node.path === undefined
      ? { missing: node.reason }
      : { version: node.version, source: node.source },
    rounds,
    budgetMs,
    warmUpOps,
    date: new Date().toISOString(),
    load: loadAverage(),
    pinned,
    figures: {},
    ratios: {},
  };
  const build = await Deno.makeTempDir({ prefix: "conduit-node-build" });
  try {
    await Deno.writeTextFile(PAYLOAD_FILE, JSON.stringify(reportPayloads(["1KB"])[0].value));
    if (node.path !== undefined && runsConduit(node.version)) await buildForNode(node.path, build);
    const subjects = NODE_SUBJECTS.filter((subject) =>
      subject === "conduit node"
        ? node.path !== undefined && runsConduit(node.version)
        : node.path !== undefined || subject.startsWith("conduit")
    );
    const placements = PLACEMENTS.filter((placement) => placement === "free" || pinned);
    // Module caches and the first-spawn costs, outside the figures.
    for (const subject of subjects) await runSubject(subject, node, "free", [20, 0], build);
    for (const placement of placements) {
      result.figures[placement] = Object.fromEntries(subjects.map((subject) => [
        subject,
        Object.fromEntries(NODE_ROWS.map((row) => [row, [] as number[]])) as Record<
          NodeRow,
          number[]
        >,
      ]));
    }
    for (let round = 0; round < rounds; round++) {
      log(`node peers round ${round + 1}/${rounds}`);
      for (const placement of placements) {
        for (const subject of rotated(subjects, round)) {
          const figures = await runSubject(subject, node, placement, [budgetMs, warmUpOps], build);
          for (const row of NODE_ROWS) result.figures[placement]![subject][row].push(figures[row]);
        }
      }
    }
  } finally {
    await Deno.remove(PAYLOAD_FILE);
    await Deno.remove(build, { recursive: true });
  }
  for (const placement of PLACEMENTS) {
    const figures = result.figures[placement];
    if (figures === undefined || figures["node json"] === undefined) continue;
    const ratios: Record<string, Record<NodeRow, Spread | undefined>> = {};
    for (const subject of NODE_SUBJECTS.filter((name) => name.startsWith("conduit"))) {
      ratios[subject] = Object.fromEntries(
        NODE_ROWS.map((row) => [row, spread(roundRatios(figures, subject, row))]),
      ) as Record<NodeRow, Spread | undefined>;
    }
    result.ratios[placement] = ratios;
  }
  return result;
}

/** conduit's figure ÷ the best Node figure of the same round, per round (> 1: conduit ahead). */
function roundRatios(
  figures: Record<string, Record<NodeRow, number[]>>,
  subject: string,
  row: NodeRow,
): number[] {
  const own = figures[subject][row];
  const json = figures["node json"][row];
  const advanced = figures["node advanced"][row];
  return own.map((value, i) =>
    lowerIsBetter(row)
      ? Math.min(json[i], advanced[i]) / value
      : value / Math.max(json[i], advanced[i])
  );
}

/** One round of `subject`: a parent process measuring every row with `[budget ms, warm-up]`. */
async function runSubject(
  subject: string,
  node: NodeBinary,
  placement: Placement,
  [budgetMs, warmUpOps]: number[],
  build: string,
): Promise<Record<NodeRow, number>> {
  const [kind, mode] = subject.split(" ");
  const conduitRows = new URL("conduit_rows.ts", CHILDREN).pathname;
  const command = kind === "node"
    ? [node.path!, new URL("node_rows.mjs", CHILDREN).pathname, mode]
    : mode === "node"
    ? [node.path!, `${build}/bench/report/children/conduit_rows.js`, "default"]
    : [Deno.execPath(), "run", "-A", conduitRows, mode];
  command.push(String(budgetMs), PAYLOAD_FILE, String(warmUpOps));
  if (placement === "pinned") command.unshift("taskset", "-c", "0");
  const out = await new Deno.Command(command[0], {
    args: command.slice(1),
    stdin: "null",
    stderr: "inherit",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success) throw new Error(`${subject} (${placement}) exited with ${out.code}: ${text}`);
  return JSON.parse(text.split("\n").at(-1)!);
}

/** conduit's Node build (children/node_build.mjs) into `out`. */
async function buildForNode(node: string, out: string): Promise<void> {
  const builder = new URL("node_build.mjs", CHILDREN).pathname;
  const root = new URL("../../", import.meta.url).pathname;
  const built = await new Deno.Command(node, { args: [builder, root, out] }).output();
  if (!built.success) {
    throw new Error(`node_build.mjs failed: ${new TextDecoder().decode(built.stderr)}`);
  }
}

/** Whether Node `version` (`v24.1.0`) can build conduit for its row. */
function runsConduit(version: string): boolean {
  const [major, minor] = version.slice(1).split(".").map(Number);
  return major > CONDUIT_NODE[0] || (major === CONDUIT_NODE[0] && minor >= CONDUIT_NODE[1]);
}

async function hasTaskset(): Promise<boolean> {
  try {
    return (await new Deno.Command("taskset", { args: ["-c", "0", "true"] }).output()).success;
  } catch {
    return false;
  }
}

/** The ratio every row aims at. */
export const NODE_TARGET = 1.2;

/** The section's Markdown lines. */
export function nodePeersMarkdown(result: NodePeersResult | undefined): string[] {
  const out = ["## Node peers", ""];
  if (result === undefined) {
    out.push("Not measured in this run.", "");
    return out;
  }
  out.push(
    "missing" in result.node
      ? `**No Node peers in this run**: ${result.node.missing}. conduit's own figures follow.`
      : `A Node ${result.node.version} parent (${result.node.source}) forking a Node child, ` +
        '`serialization: "json"` and `"advanced"`, against a Deno parent with a `spawnWorker` ' +
        "worker (default transport, a Unix socket, and stdio) and, as `conduit node`, conduit's " +
        "Node build (JavaScript, `children/node_build.mjs`) on that Node (a Node parent, a Node " +
        "worker, default transport): what differs between conduit rows is the runtime's cost, not " +
        "conduit's. Free and pinned to one CPU. A ratio is " +
        "conduit ÷ the best Node mode of the round (above 1 conduit is ahead; target " +
        `${times(NODE_TARGET)}). ${roundsLine(result)}`,
    "",
  );
  if (!result.pinned) out.push("`taskset` was missing: no pinned rounds.", "");
  const placements = PLACEMENTS.filter((placement) => result.figures[placement] !== undefined);
  const subjects = NODE_SUBJECTS.filter((subject) =>
    result.figures[placements[0]]?.[subject] !== undefined
  );
  const conduits = subjects.filter((subject) => subject.startsWith("conduit"));
  const hasRatios = placements.some((placement) => result.ratios[placement] !== undefined);
  for (const row of NODE_ROWS) {
    out.push(`### ${ROWS[row][0]}`, "");
    const ratioHeads = hasRatios ? conduits.map((subject) => `${subject} ÷ best Node`) : [];
    const head = ["CPUs", ...subjects, ...ratioHeads];
    out.push(`| ${head.join(" | ")} |`, `| ${head.map(() => "---").join(" | ")} |`);
    for (const placement of placements) {
      const figures = result.figures[placement]!;
      const cells = [placement === "free" ? "free" : "pinned to one"];
      for (const subject of subjects) {
        cells.push(spreadOf(spread(figures[subject][row]), ROWS[row][1]));
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
