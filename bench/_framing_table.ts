// Turns `deno bench --json bench/framing_bench.ts` output into a Markdown table of frames/s
// and payload MB/s (10^6 bytes) per case and payload size, from the mean time per iteration.
//
//   deno bench -A --json bench/framing_bench.ts > framing.json
//   deno run -A bench/_framing_table.ts framing.json

import { FRAMES } from "./_framing_sizes.ts";

interface BenchOutput {
  benches: Array<{ name: string; results: Array<{ ok?: { avg: number } }> }>;
}

const path = Deno.args[0];
if (path === undefined) throw new TypeError("usage: _framing_table.ts <deno bench --json output>");
const output = JSON.parse(await Deno.readTextFile(path)) as BenchOutput;

const labels = Object.keys(FRAMES);
const rows = new Map<string, Map<string, number>>();
for (const bench of output.benches) {
  const avg = bench.results[0]?.ok?.avg;
  const space = bench.name.lastIndexOf(" ");
  const [name, label] = [bench.name.slice(0, space), bench.name.slice(space + 1)];
  if (avg === undefined || !(label in FRAMES)) continue;
  if (!rows.has(name)) rows.set(name, new Map());
  rows.get(name)!.set(label, avg);
}

const cell = (name: string, label: string): string => {
  const avg = rows.get(name)?.get(label);
  if (avg === undefined) return "–";
  const { size, frames } = FRAMES[label];
  const perSecond = frames / avg * 1e9;
  const rate = perSecond >= 1e5
    ? `${(perSecond / 1e6).toFixed(2)}M/s`
    : `${(perSecond / 1e3).toFixed(1)}k/s`;
  return `${rate}, ${(perSecond * size / 1e6).toFixed(0)} MB/s`;
};
console.log(`| case | ${labels.join(" | ")} |`);
console.log(`| --- | ${labels.map(() => "---").join(" | ")} |`);
for (const name of rows.keys()) {
  console.log(`| ${name} | ${labels.map((label) => cell(name, label)).join(" | ")} |`);
}
