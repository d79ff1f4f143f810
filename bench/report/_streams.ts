// A long stream from the peer (1 GiB of 64 KiB and of 1 MiB raw items in the full run),
// consumed as fast as the driver can: MB/s and the peak RSS growth of both processes, against
// raw frames sent one way over the same transport. "conduit-recycle" is conduit with each item
// handed back through `Channel.recycle` once counted, so the driver reuses item buffers. Each
// stream has a driver process of its own (this module run as a program), spawned by the
// harness; by hand:
//   deno run -A bench/report/_streams.ts \
//     '{"transport":"unix","approach":"conduit-recycle","items":1024,"itemBytes":1048576,"socketDir":"/tmp"}'

import { methodCodecsFor, type TransportName } from "./_bench_api.ts";
import { conduitClient, RawFrameClient } from "./_clients.ts";
import type { ReportConfig } from "./_config.ts";
import { resetPeakRss, retryOnce, rssOf, runFresh } from "./_measure.ts";
import { spawnPeer } from "../_peers.ts";
import { type Spread, spread } from "./_stats.ts";

type Approach = "conduit" | "conduit-recycle" | "raw-frames";

/** One transport × approach × item size. */
export interface StreamCell {
  transport: string;
  approach: Approach;
  /** Bytes streamed per run. */
  bytes: number;
  /** Bytes per item. */
  itemBytes: number;
  mbps: Spread;
  /** How far the driver's peak RSS rose above its RSS at the start, in MiB. */
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

/** What a driver process streams: its command line, as JSON. */
interface StreamJob {
  transport: TransportName;
  approach: Approach;
  items: number;
  itemBytes: number;
  socketDir: string;
}

const CHILDREN = new URL("./children/", import.meta.url);

/** Streams over every transport, `config.runs` times. */
export async function runStreams(
  config: ReportConfig,
  socketDir: string,
  log: (line: string) => void,
): Promise<StreamCell[]> {
  const total = config.streamBytes;
  const cases = config.transports.flatMap((transport) =>
    config.streamItemSizes.flatMap((itemBytes) =>
      (["conduit", "conduit-recycle", "raw-frames"] as const).map((approach) => ({
        job: { transport, approach, items: total / itemBytes, itemBytes, socketDir },
        runs: [] as StreamRun[],
      }))
    )
  );
  for (let run = 0; run < config.runs; run++) {
    for (const { job, runs } of cases) {
      const label = `run ${run + 1}/${config.runs} stream ` +
        `${job.transport} ${job.approach} ${job.itemBytes}`;
      const result = await retryOnce(label, () => streamInFreshProcess(job), log);
      runs.push(result);
      log(
        `${label}: ${result.mbps.toFixed(0)} MB/s, ` +
          `rss growth driver ${result.parentGrowthMiB.toFixed(1)} MiB, ` +
          `peer ${result.childGrowthMiB.toFixed(1)} MiB`,
      );
    }
  }
  return cases.map(({ job: { transport, approach, itemBytes }, runs }): StreamCell => ({
    transport,
    approach,
    bytes: total,
    itemBytes,
    mbps: spread(runs.map((r) => r.mbps))!,
    parentGrowthMiB: spread(runs.map((r) => r.parentGrowthMiB))!,
    childGrowthMiB: spread(runs.map((r) => r.childGrowthMiB))!,
    runs,
  }));
}

/**
 * Runs one stream with a fresh driver process (this module as a program), so the driver's
 * RSS growth is not hidden by what the harness process has allocated before.
 */
function streamInFreshProcess(job: StreamJob): Promise<StreamRun> {
  return runFresh(import.meta.filename!, [JSON.stringify(job)]);
}

/** The driver's side of one stream: spawns the peer, streams, measures both processes. */
async function streamOnce(
  { transport, approach, items, itemBytes, socketDir }: StreamJob,
): Promise<StreamRun> {
  const total = items * itemBytes;
  if (approach !== "raw-frames") {
    const recycle = approach === "conduit-recycle";
    const peer = await spawnPeer(
      transport,
      new URL("conduit_peer.ts", CHILDREN),
      ["json"],
      socketDir,
    );
    const client = await conduitClient(peer, (await methodCodecsFor("json")).methodCodecs);
    await client.noted();
    const result = await measured(peer.pid, async () => {
      let bytes = 0;
      const stream = client.channel.remote.blobs(
        { count: items, bytes: itemBytes },
        { timeout: Infinity },
      );
      for await (const item of stream) {
        bytes += item.length;
        if (recycle) client.channel.recycle(item);
      }
      return bytes;
    }, total);
    await client.close();
    return result;
  }
  const client = new RawFrameClient(
    await spawnPeer(transport, new URL("raw_frame_echo.ts", CHILDREN), [], socketDir),
  );
  await client.noted();
  const result = await measured(client.pid, () => client.source(items, itemBytes), total);
  await client.close();
  return result;
}

if (import.meta.main) {
  console.log(JSON.stringify(await streamOnce(JSON.parse(Deno.args[0]))));
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
