// Profiles one report workload on both sides of a Unix socket and prints the functions with
// the most self time in each process, with file:line, as the report's analysis quotes them.
//
//   deno run -A bench/report/profile.ts <json|msgpack|protobuf|raw> <mode> [count]
//
// Modes: notes, `count` one-way messages (64 raw bytes, or the small object); calls, `count`
// small calls with 256 in flight; big, `count` sequential calls echoing the 1MB payload;
// stream, `count` MiB streamed from the peer in 1 MiB raw items.
// The peer runs with --cpu-prof; this script re-runs itself with --cpu-prof as the driver.
// Profiles go to a fresh temporary directory, printed at the end.

import { listenUnix } from "../../transports/unix.ts";
import { type CodecName, methodCodecsFor } from "./_bench_api.ts";
import { conduitClient } from "./_clients.ts";
import { callsPerSecond, notesPerSecond, resetPeakRss, rssOf } from "./_measure.ts";
import { rawNote, reportPayloads, valueFor } from "./_payloads.ts";

const PEER = new URL("./children/conduit_peer.ts", import.meta.url).pathname;
const [codec, mode, countArg, dirArg] = Deno.args;
const DEFAULT_COUNTS: Record<string, number> = {
  notes: 1_000_000,
  calls: 300_000,
  big: 100,
  stream: 1024,
};
const count = Number(countArg ?? DEFAULT_COUNTS[mode]);

if (
  !["json", "msgpack", "protobuf", "raw"].includes(codec) ||
  !(mode in DEFAULT_COUNTS)
) {
  console.error("usage: profile.ts <json|msgpack|protobuf|raw> <notes|calls|big|stream> [count]");
  Deno.exit(2);
}

if (dirArg === undefined) {
  const dir = await Deno.makeTempDir({ prefix: "conduit-prof-" });
  const status = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `--cpu-prof`,
      `--cpu-prof-dir=${dir}/driver`,
      new URL(import.meta.url).pathname,
      codec,
      mode,
      String(count),
      dir,
    ],
  }).spawn().status;
  if (!status.success) Deno.exit(1);
  for (const side of ["driver", "peer"]) {
    for await (const entry of Deno.readDir(`${dir}/${side}`)) {
      console.log(`\n${side} (${entry.name}):`);
      console.log(summarize(JSON.parse(await Deno.readTextFile(`${dir}/${side}/${entry.name}`))));
    }
  }
  console.log(`\nprofiles in ${dir}`);
} else {
  await drive(codec as CodecName, mode, count, dirArg);
}

async function drive(codec: CodecName, mode: string, count: number, dir: string): Promise<void> {
  const socketDir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cdp" });
  const listener = await listenUnix(`${socketDir}/s`);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--cpu-prof",
      `--cpu-prof-dir=${dir}/peer`,
      PEER,
      "unix",
      `${socketDir}/s`,
      codec,
    ],
    stdin: "null",
    stdout: "null",
  }).spawn();
  const { value: transport } = await listener[Symbol.asyncIterator]().next();
  await listener.close();
  const peer = {
    transport: transport!,
    pid: child.pid,
    status: child.status,
    close: async () => {
      await transport!.close();
      await child.status;
    },
  };
  const client = await conduitClient(peer, (await methodCodecsFor(codec)).methodCodecs);
  const [small] = reportPayloads(["small"]);
  await client.noted();
  if (mode === "notes") {
    const value = codec === "raw" ? rawNote() : small.value;
    const rate = await notesPerSecond(client, value, count, 8192);
    console.log(`${count} ${codec} notifications: ${rate.toFixed(0)}/s`);
  } else if (mode === "big") {
    const [big] = reportPayloads(["1MB"]);
    const value = valueFor(codec, big);
    const start = performance.now();
    for (let i = 0; i < count; i++) await client.echo(value);
    const seconds = (performance.now() - start) / 1000;
    console.log(
      `${count} ${codec} 1MB calls: ${
        (2 * count * big.json.length / 1e6 / seconds).toFixed(1)
      } MB/s`,
    );
  } else if (mode === "calls") {
    const value = valueFor(codec, small);
    const rate = await callsPerSecond(() => client.echoSmall(value), 256, count);
    console.log(`${count} ${codec} small calls, 256 in flight: ${rate.toFixed(0)}/s`);
  } else {
    resetPeakRss("self");
    resetPeakRss(child.pid);
    const [ours, theirs] = [rssOf("self")!.current, rssOf(child.pid)!.current];
    const start = performance.now();
    let bytes = 0;
    const items = client.channel.remote.blobs({ count, bytes: 1 << 20 }, { timeout: Infinity });
    for await (const item of items) bytes += item.length;
    const seconds = (performance.now() - start) / 1000;
    const growth = (pid: number | "self", from: number) =>
      ((rssOf(pid)!.peak - from) / 2 ** 20).toFixed(1);
    console.log(
      `${count} MiB streamed: ${(bytes / 1e6 / seconds).toFixed(0)} MB/s, peak RSS growth ` +
        `driver ${growth("self", ours)} MiB, peer ${growth(child.pid, theirs)} MiB`,
    );
  }
  await client.close();
  await Deno.remove(socketDir, { recursive: true });
}

interface CpuProfile {
  nodes: Array<
    { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }
  >;
  samples: number[];
  timeDeltas: number[];
}

/** The top self-time functions of a V8 CPU profile, as "share  name file:line" lines. */
function summarize(profile: CpuProfile, top = 15): string {
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    total += delta;
    const frame = frames.get(id)!;
    const file = frame.url.replace(
      /^file:\/\/.*?\/(?=(channel|framing|transports|codecs|bench)\/)/,
      "",
    )
      .replace(/^.*(node_modules|registry\.npmjs\.org)\//, "npm:");
    const key = `${frame.functionName || "(anonymous)"} ${file}${
      file ? `:${frame.lineNumber + 1}` : ""
    }`;
    self.set(key, (self.get(key) ?? 0) + delta);
  });
  return [...self].sort((a, b) => b[1] - a[1]).slice(0, top)
    .map(([key, time]) => `${(100 * time / total).toFixed(1).padStart(5)}%  ${key}`)
    .join("\n") + `\n(total ${(total / 1000).toFixed(0)} ms)`;
}
