// What `import "@conduit/ipc"` loads: the modules reached by static imports that are not
// type-only, as `deno info --json` reports the graph. A parent loads no npm package until it
// uses a codec that needs one, and never the worker's side (one engine per process); a worker
// that imports `@conduit/ipc/workers/serve` loads its side and not the parent's.

import assert from "node:assert/strict";
import { denoInfo } from "./_test_deno_info.ts";

const root = new URL("./", import.meta.url);

/** The specifiers `file` loads as it is imported, relative to the package root. */
async function loaded(file: string): Promise<Set<string>> {
  const info = await denoInfo(file);
  const modules = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const pending = [...info.roots];
  while (pending.length > 0) {
    const specifier = pending.pop() as string;
    if (seen.has(specifier)) continue;
    seen.add(specifier);
    for (const dependency of modules.get(specifier)?.dependencies ?? []) {
      if (dependency.code !== undefined && !dependency.isDynamic) {
        pending.push(dependency.code.specifier);
      }
    }
  }
  return new Set([...seen].map((specifier) => specifier.replace(root.href, "")));
}

/** Modules only a worker runs: the worker's side of serveWorker. */
const WORKER_SIDE = ["workers/serve_worker.ts"];
/** Modules only a parent runs. */
const PARENT_SIDE = ["workers/spawn_worker.ts", "workers/worker_pool.ts"];

for (const entry of ["mod.ts", "workers/mod.ts"]) {
  Deno.test(`module graph: ${entry} loads no npm package and not the worker's side`, async () => {
    const modules = await loaded(new URL(entry, root).pathname);
    assert.ok(modules.has("workers/spawn_worker.ts"), `${entry} misses spawnWorker`);
    const npm = [...modules].filter((specifier) => specifier.startsWith("npm:"));
    assert.deepEqual(npm, [], `${entry} loads ${npm.join(", ")}`);
    for (const module of WORKER_SIDE) assert.ok(!modules.has(module), `${entry} loads ${module}`);
  });
}

Deno.test("module graph: workers/serve_worker.ts loads the worker's side, not the parent's, and no npm package", async () => {
  const modules = await loaded(new URL("workers/serve_worker.ts", root).pathname);
  assert.ok(modules.has("workers/worker_env.ts"));
  // Its default codec, the structured one, is conduit's own MessagePack.
  assert.ok(modules.has("codecs/structured.ts"));
  const npm = [...modules].filter((specifier) => specifier.startsWith("npm:"));
  assert.deepEqual(npm, [], `loads ${npm.join(", ")}`);
  assert.ok(modules.has("transports/stdio_child.ts"));
  for (const module of PARENT_SIDE) assert.ok(!modules.has(module), `loads ${module}`);
});
