// Arrow by rows: the same rows echoed as an Arrow table (arrow codec) and as an array of row
// objects (JSON), over every transport.

import assert from "node:assert/strict";
import type { Table } from "apache-arrow";
import { type BenchCodecs, type CodecName, methodCodecsFor } from "./_bench_api.ts";
import { makeRows, makeTable } from "./_arrow_rows.ts";
import { conduitClient } from "./_clients.ts";
import type { ReportConfig } from "./_config.ts";
import { estimate, sequential } from "./_measure.ts";
import { spawnPeer } from "./_peers.ts";
import {
  combineRuns,
  type LatencySpread,
  type LatencySummary,
  type Spread,
  spread,
} from "./_stats.ts";

/** One transport × codec × row count. */
export interface ArrowCell {
  transport: string;
  codec: "arrow" | "json";
  rows: number;
  /** The encoded size, in bytes. */
  bytes: number;
  latencyMs: LatencySpread;
  /** Rows per second, counting both directions of the round trip. */
  rowsPerSec: Spread;
  runs: LatencySummary[];
}

const PEER = new URL("./children/conduit_peer.ts", import.meta.url);

/** Measures every Arrow cell `config.runs` times. */
export async function runArrow(
  config: ReportConfig,
  socketDir: string,
  log: (line: string) => void,
): Promise<ArrowCell[]> {
  const sets = config.arrowRows.map((count) => {
    const rows = makeRows(count);
    return { count, rows, table: makeTable(rows) };
  });
  const codecs: Array<"arrow" | "json"> = ["arrow", "json"];
  const benchCodecs = new Map<CodecName, BenchCodecs>();
  for (const codec of codecs) benchCodecs.set(codec, await methodCodecsFor(codec));
  const samples = new Map<string, number>();
  const runs = new Map<string, LatencySummary[]>();
  for (let run = 0; run < config.runs; run++) {
    for (const transport of config.transports) {
      for (const codec of codecs) {
        const client = await conduitClient(
          await spawnPeer(transport, PEER, [codec], socketDir),
          benchCodecs.get(codec)!.methodCodecs,
        );
        try {
          for (const set of sets) {
            if (!measures(transport, codec, set.count)) continue;
            const value = codec === "arrow" ? set.table : set.rows;
            const call = () => client.echo(value);
            let perCallMs: number | undefined;
            if (run === 0) {
              const start = performance.now();
              const echoed = await call();
              const took = performance.now() - start;
              const count = codec === "arrow"
                ? (echoed as Table).numRows
                : (echoed as unknown[]).length;
              assert.equal(count, set.count, `${transport} ${codec} ${set.count} rows`);
              if (took > config.warmupMs) perCallMs = took;
            }
            perCallMs ??= await estimate(call, config.warmupMs, 1);
            const key = `${transport} ${codec} ${set.count}`;
            let n = samples.get(key);
            if (n === undefined) {
              n = Math.min(
                config.maxSamples,
                Math.max(config.arrowMinSamples, Math.round(config.sampleBudgetMs / perCallMs)),
              );
              samples.set(key, n);
            }
            const summary = await sequential(call, n);
            if (!runs.has(key)) runs.set(key, []);
            runs.get(key)!.push(summary);
            log(
              `run ${run + 1}/${config.runs} arrow ${key} rows: avg ${summary.avg.toFixed(2)} ms ` +
                `(n=${n})`,
            );
          }
        } finally {
          await client.close();
        }
      }
    }
  }
  const cells: ArrowCell[] = [];
  for (const transport of config.transports) {
    for (const codec of codecs) {
      const encode = benchCodecs.get(codec)!.payload;
      for (const set of sets) {
        if (!measures(transport, codec, set.count)) continue;
        const perRun = runs.get(`${transport} ${codec} ${set.count}`)!;
        cells.push({
          transport,
          codec,
          rows: set.count,
          bytes: encode.encode(codec === "arrow" ? set.table : set.rows).length,
          latencyMs: combineRuns(perRun),
          rowsPerSec: spread(perRun.map((summary) => 2 * set.count / (summary.avg / 1000)))!,
          runs: perRun,
        });
      }
    }
  }
  return cells;
}

/**
 * Whether a cell is measured: 1M rows as JSON (76 MB, about 5 s a call) only over a Unix
 * socket, where the comparison with Arrow is made; the transport hardly matters at that size.
 */
function measures(transport: string, codec: "arrow" | "json", rows: number): boolean {
  return codec === "arrow" || rows < 1_000_000 || transport === "unix";
}
