// The benchmark report: spawns real peer processes and measures conduit over stdio, Unix
// sockets and TCP with every codec, against the baselines in the same run (NDJSON over stdio,
// raw frames over the same transport, node:child_process fork IPC, a Web Worker). Writes
// REPORT.md and results.json (every figure) to the output directory.
//
//   deno run -A bench/report/run.ts [--quick] [--out dir]
//   deno run -A bench/report/run.ts --render bench/report/results.json
//
// The full run takes about 12 minutes on 2 cores; --quick exercises every code path in under
// two minutes (CI runs it to prove the harness works; its figures mean little). --render
// measures nothing: it rewrites the report and its targets from a results.json, such as
// the one a full run leaves beside this file (git-ignored: it is rewritten by every run).

import { runMachine } from "./_machine.ts";
import { runTelemetry } from "./_telemetry.ts";
import { runThreads } from "./_threads.ts";
import { runWorkers } from "./_workers.ts";
import { runNodePeers } from "./_node_rows.ts";
import {
  type CodecSpeedRun,
  combineCodecRuns,
  measureCodecSpeed,
  TABLE_CODECS,
} from "./_codec_speed.ts";
import { FULL, QUICK } from "./_config.ts";
import { environment, loadAverage } from "./_env.ts";
import { renderMarkdown } from "./_markdown.ts";
import { rssOf } from "./_measure.ts";
import { reportPayloads } from "./_payloads.ts";
import type { ReportResults } from "./_results.ts";
import { runStreams } from "./_streams.ts";
import { runSuite, subjects, warmUp } from "./_suite.ts";
import { evaluateTargets } from "./_targets.ts";

const option = (name: string) => {
  const at = Deno.args.indexOf(`--${name}`);
  if (at >= 0 && Deno.args[at + 1] === undefined) throw new TypeError(`--${name} needs a value`);
  return at >= 0 ? Deno.args[at + 1] : undefined;
};
const config = { ...(Deno.args.includes("--quick") ? QUICK : FULL) };
// By default the report goes to bench/REPORT.md and results.json beside this file; with --out
// both go to that directory.
const outDir = option("out") ?? new URL(".", import.meta.url).pathname;
const reportPath = option("out")
  ? `${outDir}/REPORT.md`
  : new URL("../REPORT.md", import.meta.url).pathname;

const started = performance.now();
const log = (line: string) => {
  const seconds = ((performance.now() - started) / 1000).toFixed(0).padStart(4);
  console.error(`[${seconds} s] ${line}`);
};

const render = option("render");
if (render !== undefined) {
  const results: ReportResults = undefinedForNull(JSON.parse(await Deno.readTextFile(render)));
  results.targets = evaluateTargets(results);
  await write(results);
} else {
  await write(await measure());
}

async function measure(): Promise<ReportResults> {
  const env = await environment();
  log(`${config.mode} run; load average ${env.loadBefore}`);
  const socketDir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cdr" });
  try {
    const payloads = reportPayloads(config.payloads);
    const small = payloads[0];
    // The raw codec returns its input: it has no speed of its own to compare with.
    const codecRuns: CodecSpeedRun[] = [];
    const list = await subjects(config, small, socketDir);
    log(`warming up ${list.length} peers (module caches)`);
    await warmUp(list);
    const suite = await runSuite(config, list, payloads, socketDir, log, async (run) => {
      log(`run ${run + 1}/${config.runs} in-memory codec speed`);
      codecRuns.push(
        await measureCodecSpeed(
          [...config.codecs.filter((codec) => codec !== "raw"), ...TABLE_CODECS],
          config.payloads,
          config.codecBudgetMs,
        ),
      );
    });
    log("streams");
    const streams = await runStreams(config, socketDir, log);
    log("node peers");
    const nodePeers = await runNodePeers(config, log);
    log("closer to the machine");
    const machine = await runMachine(config.machineRounds, config.machineScale, socketDir, log);
    log("workers");
    const workers = await runWorkers(config.workersRounds, config.workersStreamMB, log);
    log("threads");
    const threads = await runThreads(config.threadsRounds, log);
    log("tracing on");
    const telemetry = await runTelemetry(config.telemetryRounds, config.telemetryScale, log);
    env.loadAfter = loadAverage();
    env.seconds = Math.round((performance.now() - started) / 1000);
    const results: ReportResults = {
      environment: env,
      config,
      payloads: payloads.map((payload) => ({ name: payload.name, jsonBytes: payload.json.length })),
      parentPeakRssMiB: (rssOf("self")?.peak ?? 0) / 2 ** 20,
      codecSpeed: combineCodecRuns(codecRuns),
      suite,
      streams,
      nodePeers,
      machine,
      workers,
      threads,
      telemetry,
      targets: [],
    };
    results.targets = evaluateTargets(results);
    return results;
  } finally {
    await Deno.remove(socketDir, { recursive: true });
  }
}

async function write(results: ReportResults): Promise<void> {
  await Deno.mkdir(outDir, { recursive: true });
  await Deno.writeTextFile(`${outDir}/results.json`, JSON.stringify(results, null, 1) + "\n");
  await Deno.writeTextFile(reportPath, renderMarkdown(results));
  // Formatted as `deno fmt --check` (a CI gate) expects the committed report to be.
  const fmt = await new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--quiet", reportPath, `${outDir}/results.json`],
  }).output();
  if (!fmt.success) throw new Error(`deno fmt failed: ${new TextDecoder().decode(fmt.stderr)}`);
  log(`wrote ${reportPath} and ${outDir}/results.json`);
  for (const target of results.targets) {
    log(`${target.met ? "met   " : "MISSED"} ${target.target}: ${target.measured}`);
  }
}

/** JSON has no `undefined` (a percentile too few samples support, say): null stands for it. */
function undefinedForNull<T>(value: T): T {
  if (Array.isArray(value)) {
    value.forEach((item, i) => value[i] = item === null ? undefined : undefinedForNull(item));
  } else if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    for (const [key, item] of Object.entries(record)) {
      record[key] = item === null ? undefined : undefinedForNull(item);
    }
  }
  return value;
}
