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
  Deno.test(`module graph: ${entry} loads no npm or node: module and not the worker's side`, async () => {
    const modules = await loaded(new URL(entry, root).pathname);
    assert.ok(modules.has("workers/spawn_worker.ts"), `${entry} misses spawnWorker`);
    const npm = [...modules].filter((specifier) => specifier.startsWith("npm:"));
    assert.deepEqual(npm, [], `${entry} loads ${npm.join(", ")}`);
    // On Deno, a `node:` import loads the runtime's Node layer as the program starts
    // (`DENO_LOG_LAZY_LOAD=1` lists it); conduit's Node-only modules load when used, off Deno.
    const node = [...modules].filter((specifier) => specifier.startsWith("node:"));
    assert.deepEqual(node, [], `${entry} loads ${node.join(", ")}`);
    for (const module of WORKER_SIDE) assert.ok(!modules.has(module), `${entry} loads ${module}`);
  });
}

Deno.test("module graph: workers/serve_worker.ts loads the worker's side, not the parent's, no npm or node: module", async () => {
  const modules = await loaded(new URL("workers/serve_worker.ts", root).pathname);
  assert.ok(modules.has("workers/worker_env.ts"));
  // Its default codec, the structured one, is conduit's own MessagePack.
  assert.ok(modules.has("codecs/structured.ts"));
  const foreign = [...modules].filter((specifier) => /^(npm|node):/.test(specifier));
  assert.deepEqual(foreign, [], `loads ${foreign.join(", ")}`);
  // Its default transport, a Unix socket, loads with it; stdio, the fallback, on demand.
  assert.ok(modules.has("transports/unix.ts"));
  assert.ok(!modules.has("transports/stdio_child.ts"));
  for (const module of PARENT_SIDE) assert.ok(!modules.has(module), `loads ${module}`);
});

/** The most local modules `import "@conduit/ipc"` may load. */
const ROOT_BUDGET = 45;
/**
 * The most lines of code (neither blank nor comment) a worker loads before it can answer its
 * first call, over its default transport (a Unix socket). A worker's start pays most for the code
 * it loads, and some for each file it comes in (bench/report/notes.md, target 16); what the
 * budget stands for is `bench/ab_engine.ts` case `spawn`, which a change near it is measured by.
 */
const WORKER_CODE_BUDGET = 9_707;
/** Loaded only when used: auth, a heartbeat or idle timeout, telemetry, pool metrics. */
const ON_DEMAND = [
  "protocol/auth.ts",
  "wires/conduit/auth.ts",
  "channel/_connection_timers.ts",
  "channel/_telemetry.ts",
  "workers/_pool_metrics.ts",
];

Deno.test("module graph: the root stays within its module budget, a worker within its code", async () => {
  const rootModules = await loaded(new URL("mod.ts", root).pathname);
  const rootLocal = [...rootModules].filter((specifier) => !specifier.includes(":"));
  assert.ok(
    rootLocal.length <= ROOT_BUDGET,
    `mod.ts loads ${rootLocal.length} local modules, over its budget of ${ROOT_BUDGET}`,
  );
  const workerModules = await loaded(new URL("workers/serve_worker.ts", root).pathname);
  let code = 0;
  for (const specifier of workerModules) {
    if (specifier.includes(":")) continue;
    code += codeLines(await Deno.readTextFile(new URL(specifier, root)));
  }
  assert.ok(
    code <= WORKER_CODE_BUDGET,
    `workers/serve_worker.ts loads ${code} lines of code, over its budget of ${WORKER_CODE_BUDGET}`,
  );
  for (const modules of [rootModules, workerModules]) {
    for (const module of ON_DEMAND) assert.ok(!modules.has(module), `loads ${module}`);
  }
});

/** The lines of `source` that are neither blank nor comment lines. */
function codeLines(source: string): number {
  return source.split("\n").filter((line) => {
    const text = line.trim();
    return text !== "" && !text.startsWith("//") && !text.startsWith("*") &&
      !text.startsWith("/*");
  }).length;
}

Deno.test("module graph: the seams' contracts are types only, loaded by no entrypoint", async () => {
  // A contract file that gains a runtime export costs every worker and the root one module.
  for (const entry of ["mod.ts", "workers/serve_worker.ts", "jsonrpc/mod.ts"]) {
    const modules = await loaded(new URL(entry, root).pathname);
    for (const module of ["wires/types.ts", "codecs/types.ts", "transports/types.ts"]) {
      assert.ok(!modules.has(module), `${entry} loads ${module}`);
    }
  }
});

Deno.test("module graph: nothing the root can load on demand is an npm package", async () => {
  // Every module of `deno info mod.ts`, dynamic imports included: telemetry reads the runtime's
  // OpenTelemetry registry instead of importing `@opentelemetry/api`.
  const info = await denoInfo(new URL("mod.ts", root).pathname);
  const npm = info.modules.map((m) => m.specifier).filter((s) => s.startsWith("npm:"));
  assert.deepEqual(npm, []);
});
