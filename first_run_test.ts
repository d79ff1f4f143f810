// What a user's first command downloads. `deno task` installs every npm package deno.lock
// holds before it runs anything (`deno task demo` included), so deno.lock holds the packages
// of deno.json `imports` and nothing else: the library's own dependencies and the two small
// ones the tests and benchmarks import (fast-check, comlink). The npm programs the tests drive
// (the MCP SDK and reference server, vscode-jsonrpc) are locked in testdata/npm_programs.lock
// and resolved only in subprocesses (jsonrpc/_test_npm.ts).

import assert from "node:assert/strict";
import { denoInfo } from "./_test_deno_info.ts";

const root = new URL("./", import.meta.url);

interface Lock {
  specifiers: Record<string, string>;
  npm: Record<string, { dependencies?: string[] }>;
}

async function readJson<T>(file: string): Promise<T> {
  return JSON.parse(await Deno.readTextFile(new URL(file, root))) as T;
}

/** `name@version` of a lock key or a `specifiers` value's package (`a@1.0.0_peer@2` → a@1.0.0). */
function packageOf(key: string): string {
  return key.replace(/_.*$/, "");
}

/** The packages deno.json `imports` need, with their dependencies, as deno.lock resolves them. */
function importsClosure(imports: Record<string, string>, lock: Lock): Set<string> {
  const seen = new Set<string>();
  const pending: string[] = [];
  for (const target of Object.values(imports)) {
    if (!target.startsWith("npm:")) continue;
    const name = target.slice(4).replace(/@[^@/]*$/, "");
    const resolved = lock.specifiers[target];
    assert.ok(resolved !== undefined, `deno.lock does not resolve ${target}`);
    pending.push(`${name}@${resolved}`);
  }
  while (pending.length > 0) {
    const key = pending.pop() as string;
    if (seen.has(key)) continue;
    seen.add(key);
    for (const dependency of lock.npm[key]?.dependencies ?? []) {
      // A dependency is listed as `name@version` or, when only one version is locked, `name`.
      const match = dependency.includes("@", 1)
        ? dependency
        : Object.keys(lock.npm).find((k) => k.startsWith(`${dependency}@`));
      if (match !== undefined) pending.push(match);
    }
  }
  return seen;
}

Deno.test("first run: deno.lock holds only the packages deno.json imports need", async () => {
  const { imports } = await readJson<{ imports: Record<string, string> }>("deno.json");
  const lock = await readJson<Lock>("deno.lock");
  const closure = importsClosure(imports, lock);
  const extra = Object.keys(lock.npm).filter((key) => !closure.has(key));
  assert.deepEqual(extra, [], `deno.lock holds packages no import needs: ${extra.join(", ")}`);
  const specifiers = Object.keys(lock.specifiers).filter((s) =>
    !Object.values(imports).includes(s)
  );
  assert.deepEqual(specifiers, [], `deno.lock resolves specifiers no import names`);
  // The library's dependencies, the tests' fast-check, MessagePack reference and OpenTelemetry
  // API (a traced handler's, in testdata/telemetry/) and the benchmarks' comlink: the programs tests drive belong in testdata/npm_programs.lock.
  assert.deepEqual(
    Object.values(imports).filter((target) => target.startsWith("npm:")).map(packageOf).sort(),
    [
      "npm:@msgpack/msgpack@3.1.3",
      "npm:@nats-io/transport-node@3.4.0",
      "npm:@opentelemetry/api@1.9.0",
      "npm:apache-arrow@21.2.0",
      "npm:comlink@4.4.2",
      "npm:fast-check@4.10.2",
      "npm:lz4js@0.2.0",
      "npm:protobufjs@8.8.1",
    ],
  );
  assert.ok(closure.size <= 20, `deno task installs ${closure.size} packages`);
});

Deno.test("first run: the demo and its worker load no npm package but MessagePack", async () => {
  for (const file of ["examples/worker_pool_demo.ts", "examples/_prime_worker.ts"]) {
    const info = await denoInfo(new URL(file, root).pathname);
    const npm = new Set(
      info.modules.flatMap((m) => m.npmPackage === undefined ? [] : [packageOf(m.npmPackage)])
        .map((key) => key.slice(0, key.lastIndexOf("@"))),
    );
    npm.delete("@msgpack/msgpack");
    assert.deepEqual([...npm], [], `${file} loads npm packages beyond MessagePack`);
  }
});
