// The layers of the library (shared DESIGN.md): each folder imports only folders below it in
// LAYERS, no two modules import each other (directly or around a loop), and another folder's
// `_` files are imported only where ALLOWED says why. Modelled on Deno std's circular-import
// check; it reads the import statements of every library module (tests, benchmarks, examples
// and test helpers are not the library).

import assert from "node:assert/strict";

/** Bottom to top: a module may import its own layer and the layers before it. */
const LAYERS: readonly (readonly string[])[] = [
  ["(base)"], // errors.ts, _fifo.ts, _options.ts, _runtime.ts, _spawn.ts, _thread.ts, _utf8.ts, transfer.ts
  ["protocol"],
  ["codecs"],
  ["framing"],
  ["transports"],
  ["wires"],
  ["channel"],
  ["workers"],
  ["(facade)", "jsonrpc"], // mod.ts and the JSON-RPC facade
];

/** The root modules that are facades; every other root module is the base. */
const ROOT_FACADES = new Set(["mod.ts"]);

/** Imports of another folder's private (`_`) modules, each with the reason it is allowed. */
const ALLOWED: Record<string, string> = {
  // The base's private helpers serve every layer.
  "* -> _options.ts": "the one options checker",
  "* -> _runtime.ts": "the one runtime seam (timers' ref, env vars, the OS)",
  "* -> _spawn.ts": "the runtime seam's child processes (Deno.Command or node:child_process)",
  "* -> _thread.ts": "the runtime seam's threads (Web Workers or node:worker_threads)",
  "* -> _fifo.ts": "the one FIFO queue (the channel's held calls, a Node stream's chunks)",
  "* -> _utf8.ts": "the one UTF-8 length (byte limits) and the one escaping of peer text for logs",
  // The conduit wire reads and writes frames with the protocol's allocation-free machinery.
  "wires/conduit/wire.ts -> protocol/_frame_table.ts": "the frame reader",
  "wires/conduit/outbox.ts -> protocol/_frame_table.ts": "the frame encoders and cached heads",
  // The JSON-RPC wire reuses the framing's synchronous splitters behind its FrameSplitter.
  "wires/jsonrpc/wire.ts -> framing/_content_length_decoder.ts": "LSP framing",
  "wires/jsonrpc/wire.ts -> framing/_line_splitter.ts": "NDJSON framing",
  "wires/jsonrpc/wire.ts -> framing/_queue_splitter.ts": "thread transports' messages",
  // Workers own processes and threads through the transports' private process plumbing.
  "workers/_worker_process.ts -> transports/_child_process.ts":
    "spawning with stdio, and the one stderr line reader",
  "workers/_worker_socket.ts -> transports/_conn_transport.ts": "a worker's socket transport",
  "workers/_worker_socket.ts -> transports/_node_socket.ts": "the same, off Deno",
  "workers/spawn_worker.ts -> transports/_byte_channel_transport.ts": "the worker's real stdout",
  "workers/serve_worker.ts -> transports/_byte_channel_transport.ts": "the worker's real stdout",
  "workers/_node_preload.ts -> transports/_byte_channel_transport.ts": "the worker's real stdout",
  "workers/serve_worker.ts -> transports/_node_stdio.ts": "the end of stdin, on Node and Bun",
  "workers/nats_service_pool.ts -> transports/_nats_discovery.ts": "service discovery",
  // Workers wrap channel calls (pooled calls are the channel's call objects) and hold
  // the channel's process handle; the shown types keep each entrypoint's docs complete.
  "workers/* -> channel/_remote.ts": "the one remote proxy, and the call objects pools wrap",
  "workers/* -> channel/_otel.ts":
    "pooled calls keep the telemetry context they were made in; pool metrics",
  "workers/* -> channel/_shown_types.ts": "types shown by each entrypoint",
};

const root = new URL("./", import.meta.url);
const NOT_LIBRARY =
  /^(bench|examples|interop|runtimes|testdata|docs|\.ci|\.git|\.github|\.tools|node_modules)\/|(^|\/)_testdata\/|_test\.ts$|(^|\/)_test_[^/]*\.ts$|_conformance\.ts$|_test_util\.ts$/;
const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^"';]*?from\s*"(\.{1,2}\/[^"]+)"|import\s*\(?\s*"(\.{1,2}\/[^"]+)"/g;

async function libraryModules(dir = ""): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(new URL(dir || ".", root))) {
    const path = dir + entry.name + (entry.isDirectory ? "/" : "");
    if (NOT_LIBRARY.test(path)) continue;
    if (entry.isDirectory) found.push(...await libraryModules(path));
    else if (path.endsWith(".ts")) found.push(path);
  }
  return found;
}

async function importsOf(modules: string[]): Promise<Map<string, string[]>> {
  const graph = new Map<string, string[]>();
  for (const module of modules) {
    const source = await Deno.readTextFile(new URL(module, root));
    const targets: string[] = [];
    for (const match of source.matchAll(IMPORT)) {
      const url = new URL(match[1] ?? match[2], new URL(module, root));
      targets.push(decodeURIComponent(url.pathname.slice(root.pathname.length)));
    }
    graph.set(module, targets);
  }
  return graph;
}

function folderOf(module: string): string {
  const slash = module.indexOf("/");
  if (slash >= 0) return module.slice(0, slash);
  return ROOT_FACADES.has(module) ? "(facade)" : "(base)";
}

function rankOf(folder: string): number {
  const rank = LAYERS.findIndex((layer) => layer.includes(folder));
  assert.ok(rank >= 0, `the folder ${folder} is in no layer: add it to LAYERS`);
  return rank;
}

function isPrivate(module: string): boolean {
  return module.slice(module.lastIndexOf("/") + 1).startsWith("_");
}

function allowed(from: string, to: string): boolean {
  return [`${from} -> ${to}`, `* -> ${to}`, `${folderOf(from)}/* -> ${to}`].some((key) =>
    key in ALLOWED
  );
}

const graph = await importsOf(await libraryModules());

Deno.test("layers: no module imports a layer above its own", () => {
  const upward: string[] = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      if (rankOf(folderOf(to)) > rankOf(folderOf(from))) upward.push(`${from} -> ${to}`);
    }
  }
  assert.deepEqual(upward, [], "upward imports (move the imported code down, or the importer up)");
});

Deno.test("layers: another folder's private modules only where the allow-list says why", () => {
  const reaches: string[] = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      // A folder's own private modules, nested folders included, are its business.
      if (!isPrivate(to) || from.includes("/") && folderOf(from) === folderOf(to)) continue;
      if (!allowed(from, to)) reaches.push(`${from} -> ${to}`);
    }
  }
  assert.deepEqual(reaches, [], "imports of another folder's _ files not in ALLOWED");
});

Deno.test("layers: no import cycle between modules", () => {
  // Tarjan's strongly connected components: any component of two or more modules is a cycle.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;
  const visit = (module: string) => {
    index.set(module, next);
    low.set(module, next++);
    stack.push(module);
    onStack.add(module);
    for (const to of graph.get(module) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(module, Math.min(low.get(module)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(module, Math.min(low.get(module)!, index.get(to)!));
    }
    if (low.get(module) === index.get(module)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== module);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const module of graph.keys()) if (!index.has(module)) visit(module);
  assert.deepEqual(cycles, [], "modules that import each other");
});

Deno.test("layers: every allow-list entry is still used", () => {
  const used = new Set<string>();
  for (const [from, targets] of graph) {
    for (const to of targets) {
      for (const key of [`${from} -> ${to}`, `* -> ${to}`, `${folderOf(from)}/* -> ${to}`]) {
        if (key in ALLOWED) used.add(key);
      }
    }
  }
  assert.deepEqual(Object.keys(ALLOWED).filter((key) => !used.has(key)), []);
});
