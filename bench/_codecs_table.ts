// Turns `deno bench --json bench/codecs_bench.ts` output into the Markdown table of the codec
// notes: round-trip, encode and decode throughput per codec × payload, and encoded sizes.
// Throughput is the payload's compact JSON size divided by the time per iteration (the mean,
// or another statistic deno bench records: min, p75, p99), so every codec is credited with
// the same amount of data (1 MB = 10^6 bytes).
//
//   deno bench -A --json bench/codecs_bench.ts > codecs.json
//   deno run -A bench/_codecs_table.ts codecs.json [avg|min|p75|p99]

import { benchCodecs, benchPayloads } from "./_codec_payloads.ts";

interface BenchOutput {
  runtime: string;
  cpu: string;
  benches: Array<{ name: string; results: Array<{ ok?: Record<string, number> }> }>;
}

const [path, stat = "avg"] = Deno.args;
if (path === undefined) {
  throw new TypeError("usage: _codecs_table.ts <deno bench --json output> [avg|min|p75|p99]");
}
const output = JSON.parse(await Deno.readTextFile(path)) as BenchOutput;
const timeNs = new Map<string, number>();
for (const bench of output.benches) {
  const ok = bench.results[0]?.ok;
  if (ok?.[stat] !== undefined) timeNs.set(bench.name, ok[stat]);
}

const payloads = benchPayloads();
const codecNames = benchCodecs(payloads[0]).map(([name]) => name);
const mbps = (jsonBytes: number, name: string): string => {
  const ns = timeNs.get(name);
  return ns === undefined ? "–" : (jsonBytes / ns * 1e3).toFixed(0);
};

const lines = [
  `${output.runtime}, ${output.cpu}. MB/s of payload (its compact JSON size), ${stat} time.`,
  "",
  `| payload (JSON bytes) | ${
    codecNames.map((c) => `${c} round trip MB/s (enc / dec)`).join(" | ")
  } | ${codecNames.map((c) => `${c} bytes`).join(" | ")} |`,
  `| --- | ${codecNames.map(() => "---:").join(" | ")} | ${
    codecNames.map(() => "---:").join(" | ")
  } |`,
];
for (const payload of payloads) {
  const cells = [`${payload.name} (${payload.jsonBytes})`];
  const sizes: string[] = [];
  for (const [name, codec] of benchCodecs(payload)) {
    const base = `codec/${name} ${payload.name}`;
    cells.push(
      `${mbps(payload.jsonBytes, `${base} round trip`)} (${
        mbps(payload.jsonBytes, `${base} encode`)
      } / ${mbps(payload.jsonBytes, `${base} decode`)})`,
    );
    sizes.push(String(codec.encode(payload.value).length));
  }
  lines.push(`| ${[...cells, ...sizes].join(" | ")} |`);
}
console.log(lines.join("\n"));
