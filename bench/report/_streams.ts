// A long stream from the peer (1 GiB of 64 KiB and of 1 MiB raw items in the full run), consumed as fast as
// the driver can: MB/s and the peak RSS growth of both processes, against raw frames sent
// one way over the same transport. Each stream has a driver process of its own (this module
// run as a program), spawned by the harness.

import { methodCodecsFor, type TransportName } from "./_bench_api.ts";
import { conduitClient, RawFrameClient } from "./_clients.ts";
import type { ReportConfig } from "./_config.ts";
import { resetPeakRss, retryOnce, rssOf } from "./_measure.ts";
import { spawnPeer } from "./_peers.ts";
import { type Spread, spread } from "./_stats.ts";

/** One transport × approach × item size. */
export interface StreamCell {
  transport: string;
  approach: "conduit" | "raw-frames";
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

const CHILDREN = new URL("./children/", import.meta.url);

/** Streams over every transport, `config.runs` times. */
export async function runStreams(
  config: ReportConfig,
  socketDir: string,
  log: (line: string) => void,
): Promise<StreamCell[]> {
  const total = config.streamBytes;
  const runs = new Map<string, StreamRun[]>();
  const cases = config.transports.flatMap((transport) =>
    config.streamItemSizes.flatMap((itemBytes) =>
      (["conduit", "raw-frames"] as const).map((approach) => ({ transport, itemBytes, approach }))
    )
  );
  for (let run = 0; run < config.runs; run++) {
    for (const { transport, itemBytes, approach } of cases) {
      const key = `${transport} ${approach} ${itemBytes}`;
      const result = await retryOnce(
        `run ${run + 1}/${config.runs} stream ${key}`,
        () => streamInFreshProcess(transport, approach, total / itemBytes, itemBytes, socketDir),
        log,
      );
      if (!runs.has(key)) runs.set(key, []);
      runs.get(key)!.push(result);
      log(
        `run ${run + 1}/${config.runs} stream ${key}: ${result.mbps.toFixed(0)} MB/s, ` +
          `rss growth driver ${result.parentGrowthMiB.toFixed(1)} MiB, ` +
          `peer ${result.childGrowthMiB.toFixed(1)} MiB`,
      );
    }
  }
  const cells = cases.map(({ transport, itemBytes, approach }): StreamCell => {
    const perRun = runs.get(`${transport} ${approach} ${itemBytes}`)!;
    return {
      transport,
      approach,
      bytes: total,
      itemBytes,
      mbps: spread(perRun.map((r) => r.mbps))!,
      parentGrowthMiB: spread(perRun.map((r) => r.parentGrowthMiB))!,
      childGrowthMiB: spread(perRun.map((r) => r.childGrowthMiB))!,
      runs: perRun,
    };
  });
  return cells;
}

/**
 * Runs one stream with a fresh driver process (this module as a program), so the driver's
 * RSS growth is not hidden by what the harness process has allocated before.
 */
async function streamInFreshProcess(
  transport: TransportName,
  approach: "conduit" | "raw-frames",
  items: number,
  itemBytes: number,
  socketDir: string,
): Promise<StreamRun> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL(import.meta.url).pathname,
      transport,
      approach,
      String(items),
      String(itemBytes),
      socketDir,
    ],
    stdin: "null",
    stderr: "inherit",
  }).output();
  if (!output.success) throw new Error(`The stream driver exited with code ${output.code}`);
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

/** The driver's side of one stream: spawns the peer, streams, measures both processes. */
async function streamOnce(
  transport: TransportName,
  approach: "conduit" | "raw-frames",
  items: number,
  itemBytes: number,
  socketDir: string,
): Promise<StreamRun> {
  const total = items * itemBytes;
  if (approach === "conduit") {
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
      for await (const item of stream) bytes += item.length;
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
  const [transport, approach, items, itemBytes, socketDir] = Deno.args;
  const result = await streamOnce(
    transport as TransportName,
    approach as "conduit" | "raw-frames",
    Number(items),
    Number(itemBytes),
    socketDir,
  );
  console.log(JSON.stringify(result));
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
