// 1 GiB through a deliberately slow consumer: credit-based flow control must bound the memory
// the producer can make either side hold, and every byte must arrive once, in order. Each run
// is a process of its own (channel/_testdata/large_stream.ts), since RSS is per process and
// `deno test --parallel` runs other test files in this one.

import assert from "node:assert/strict";
import type { LargeStreamReport } from "./_testdata/large_stream.ts";

const ITEMS = 1024;
const ITEM_BYTES = 1024 * 1024;
const MEMORY_BOUND = 256 * 1024 * 1024;

for (const kind of ["memory", "unix"]) {
  Deno.test(`channel over ${kind}: 1 GiB stream to a slow consumer stays within the credit window`, async () => {
    const script = new URL("./_testdata/large_stream.ts", import.meta.url);
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", script.pathname, kind],
      stdin: "null",
      stderr: "inherit",
    }).output();
    assert.ok(output.success, `large_stream.ts ${kind} exited with ${output.code}`);
    const report: LargeStreamReport = JSON.parse(new TextDecoder().decode(output.stdout));
    assert.equal(report.items, ITEMS);
    assert.equal(report.bytes, ITEMS * ITEM_BYTES);
    assert.ok(report.inOrder, "items arrived out of order");
    assert.ok(report.hashMatches, "the running hash of what arrived differs from what was sent");
    assert.ok(
      report.peakRssGrowth < MEMORY_BOUND,
      `rss grew by ${(report.peakRssGrowth / 2 ** 20).toFixed(0)} MiB while streaming 1 GiB ` +
        `(bound ${MEMORY_BOUND / 2 ** 20} MiB)`,
    );
  });
}
