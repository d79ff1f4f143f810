// A long stream from the peer (1 GiB of 1 MiB raw items in the full run), consumed as fast as
// the parent can: MB/s and the peak RSS growth of both processes, against raw frames sent
// one way over the same transport.

import { methodCodecsFor } from "./_bench_api.ts";
import { conduitClient, RawFrameClient } from "./_clients.ts";
import type { ReportConfig } from "./_config.ts";
import { resetPeakRss, rssOf } from "./_measure.ts";
import { spawnPeer } from "./_peers.ts";
import { type Spread, spread } from "./_stats.ts";

/** One transport × approach. */
export interface StreamCell {
  transport: string;
  approach: "conduit" | "raw-frames";
  /** Bytes streamed per run. */
  bytes: number;
  mbps: Spread;
  /** How far the peak RSS rose above the RSS at the start, in MiB. */
  parentGrowthMiB: Spread;
  childGrowthMiB: Spread;
  runs: StreamRun[];
}

/** One run's figures. */
export interface StreamRun {
  mbps: number;
  parentGrowthMiB: number;
  childGrowthMiB: number;
}

const CHILDREN = new URL("./children/", import.meta.url);

/** Streams over every transport, `config.runs` times. */
export async function runStreams(
  config: ReportConfig,
  socketDir: string,
  log: (line: string) => void,
): Promise<StreamCell[]> {
  const { methodCodecs } = await methodCodecsFor("json");
  const total = config.streamItems * config.streamItemBytes;
  const runs = new Map<string, StreamRun[]>();
  for (let run = 0; run < config.runs; run++) {
    for (const transport of config.transports) {
      for (const approach of ["conduit", "raw-frames"] as const) {
        let result: StreamRun;
        if (approach === "conduit") {
          const peer = await spawnPeer(
            transport,
            new URL("conduit_peer.ts", CHILDREN),
            ["json"],
            socketDir,
          );
          const client = await conduitClient(peer, methodCodecs);
          await client.noted();
          result = await measured(peer.pid, async () => {
            let bytes = 0;
            const stream = client.channel.remote.blobs(
              { count: config.streamItems, bytes: config.streamItemBytes },
              { timeout: Infinity },
            );
            for await (const item of stream) bytes += item.length;
            return bytes;
          }, total);
          await client.close();
        } else {
          const client = new RawFrameClient(
            await spawnPeer(transport, new URL("raw_frame_echo.ts", CHILDREN), [], socketDir),
          );
          await client.noted();
          result = await measured(
            client.pid,
            () => client.source(config.streamItems, config.streamItemBytes),
            total,
          );
          await client.close();
        }
        const key = `${transport} ${approach}`;
        if (!runs.has(key)) runs.set(key, []);
        runs.get(key)!.push(result);
        log(
          `run ${run + 1}/${config.runs} stream ${key}: ${
            result.mbps.toFixed(0)
          } MB/s, rss growth ` +
            `parent ${result.parentGrowthMiB.toFixed(1)} MiB, peer ${
              result.childGrowthMiB.toFixed(1)
            } MiB`,
        );
      }
    }
  }
  const cells: StreamCell[] = [];
  for (const transport of config.transports) {
    for (const approach of ["conduit", "raw-frames"] as const) {
      const perRun = runs.get(`${transport} ${approach}`)!;
      cells.push({
        transport,
        approach,
        bytes: total,
        mbps: spread(perRun.map((r) => r.mbps))!,
        parentGrowthMiB: spread(perRun.map((r) => r.parentGrowthMiB))!,
        childGrowthMiB: spread(perRun.map((r) => r.childGrowthMiB))!,
        runs: perRun,
      });
    }
  }
  return cells;
}

async function measured(
  pid: number,
  stream: () => Promise<number>,
  expected: number,
): Promise<StreamRun> {
  if (!resetPeakRss("self") || !resetPeakRss(pid)) {
    throw new Error("Cannot reset the peak RSS (/proc/<pid>/clear_refs): Linux 4.0+ needed");
  }
  const parentStart = rssOf("self")!.current;
  const childStart = rssOf(pid)!.current;
  const start = performance.now();
  const bytes = await stream();
  const seconds = (performance.now() - start) / 1000;
  const parentPeak = rssOf("self")!.peak;
  const childPeak = rssOf(pid)!.peak;
  if (bytes !== expected) throw new Error(`Streamed ${bytes} bytes, expected ${expected}`);
  return {
    mbps: bytes / 1e6 / seconds,
    parentGrowthMiB: (parentPeak - parentStart) / 2 ** 20,
    childGrowthMiB: (childPeak - childStart) / 2 ** 20,
  };
}
