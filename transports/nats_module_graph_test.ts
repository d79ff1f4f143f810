// The NATS client is loaded by the NATS entrypoints only (the transport and the service pool):
// `deno info` of every other entrypoint deno.json exports has no @nats-io package in its graph.

import assert from "node:assert/strict";
import { denoInfo } from "../_test_deno_info.ts";

const root = new URL("../", import.meta.url);
const { exports } = JSON.parse(await Deno.readTextFile(new URL("deno.json", root))) as {
  exports: Record<string, string>;
};

/** The @nats-io packages in the module graph of `file`, as `deno info --json` reports it. */
async function natsPackages(file: string): Promise<string[]> {
  const info = await denoInfo(file);
  // The packages the graph imports directly (theirs come with them): ids like `name@1.2.3`.
  return info.modules.flatMap((m) => m.npmPackage ?? []).filter((id) => id.startsWith("@nats-io/"));
}

const NATS_ENTRYPOINTS = new Set(["./transports/nats", "./workers/nats"]);

Deno.test("nats/module graph: only the NATS entrypoints load @nats-io packages", async () => {
  for (const [entry, target] of Object.entries(exports)) {
    const packages = await natsPackages(new URL(target, root).pathname);
    if (NATS_ENTRYPOINTS.has(entry)) {
      assert.ok(packages.some((id) => id.startsWith("@nats-io/transport-node@")), `${entry}`);
    } else {
      assert.deepEqual(packages, [], `${entry} loads ${packages.join(", ")}`);
    }
  }
});
