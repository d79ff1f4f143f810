/**
 * Each codec entrypoint loads its own dependency and nothing heavier: importing
 * `@conduit/ipc/codecs/json` must never load apache-arrow or protobufjs. Checked on the real
 * module graph, as `deno info --json` reports it for the file deno.json exports.
 */

import assert from "node:assert/strict";

/** The npm packages (by name, dependencies included) each entrypoint may load. */
const ALLOWED: Record<string, readonly string[]> = {
  "./codecs": [],
  "./codecs/json": [],
  "./codecs/raw": [],
  // conduit's own MessagePack: no package (the tests compare it with @msgpack/msgpack).
  "./codecs/msgpack": [],
  "./codecs/structured": [],
  "./codecs/protobuf": ["protobufjs", "long"],
  "./codecs/arrow": [
    "apache-arrow",
    "flatbuffers",
    "json-with-bigint",
    "tslib",
    "@types/node",
    "undici-types",
    "lz4js",
  ],
};

/** Packages an entrypoint must load, so that the check cannot pass on an empty graph. */
const REQUIRED: Record<string, string> = {
  "./codecs/protobuf": "protobufjs",
  "./codecs/arrow": "lz4js",
};

/** Packages (and Node built-ins) no codec entrypoint other than their own may load: the
 * decompressors are the Arrow entrypoint's alone. */
const HEAVY = [
  "apache-arrow",
  "protobufjs",
  "@msgpack/msgpack",
  "msgpackr",
  "fast-check",
  "lz4js",
  "node:zlib",
];
/** Node built-ins each entrypoint may load, beyond its packages. */
const BUILTINS: Record<string, readonly string[]> = { "./codecs/arrow": ["node:zlib"] };

const root = new URL("../", import.meta.url);
const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", root))) as {
  exports: Record<string, string>;
};

for (const [entry, allowed] of Object.entries(ALLOWED)) {
  const target = config.exports[entry];
  const file = target === undefined ? undefined : new URL(target, root);
  const present = file !== undefined && (await exists(file));
  Deno.test({
    name: `codec/module graph: ${entry} loads ${
      allowed.length === 0 ? "no npm package" : `only ${allowed.join(", ")}`
    }`,
    // codecs/arrow.ts is written separately; its graph is checked as soon as it exists.
    ignore: !present,
    async fn() {
      assert.ok(file !== undefined);
      const packages = await npmPackages(file);
      for (const name of packages) {
        if (name.startsWith("node:")) {
          const ok = !HEAVY.includes(name) || (BUILTINS[entry] ?? []).includes(name);
          assert.ok(ok, `${entry} loads ${name}`);
        } else {
          assert.ok(allowed.includes(name), `${entry} loads npm:${name}`);
        }
      }
      for (const builtin of BUILTINS[entry] ?? []) {
        assert.ok(packages.has(builtin), `${entry} misses ${builtin}`);
      }
      for (const heavy of HEAVY) {
        if (!allowed.includes(heavy) && !(BUILTINS[entry] ?? []).includes(heavy)) {
          assert.ok(!packages.has(heavy), `${entry} loads ${heavy}`);
        }
      }
      const required = REQUIRED[entry];
      if (required !== undefined) assert.ok(packages.has(required), `${entry} misses ${required}`);
    },
  });
}

interface DenoInfo {
  modules: Array<{ kind: string; specifier: string; npmPackage?: string }>;
  npmPackages: Record<string, { name: string; dependencies: string[] }>;
}

/** The names of every npm package `file`'s graph loads, dependencies included, and of the
 * Node built-ins it imports (`node:zlib`). */
async function npmPackages(file: URL): Promise<Set<string>> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--config", new URL("deno.json", root).pathname, file.pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  const info = JSON.parse(new TextDecoder().decode(stdout)) as DenoInfo;
  const pending = info.modules.flatMap((m) => (m.npmPackage === undefined ? [] : [m.npmPackage]));
  const seen = new Set<string>();
  while (pending.length > 0) {
    const id = pending.pop() as string;
    if (seen.has(id)) continue;
    seen.add(id);
    pending.push(...(info.npmPackages[id]?.dependencies ?? []));
  }
  const builtins = info.modules.flatMap((
    m,
  ) => (m.specifier.startsWith("node:") ? [m.specifier] : []));
  return new Set([...[...seen].map((id) => info.npmPackages[id]?.name ?? id), ...builtins]);
}

async function exists(file: URL): Promise<boolean> {
  try {
    await Deno.stat(file);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}
