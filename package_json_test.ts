// package.json is for Node and Bun only: it makes the npm packages of deno.json's `imports`
// resolvable there (`npm install` in a checkout). deno.json stays the source of truth; these
// tests fail when the two disagree: the same packages at the same pinned versions, and the
// packages the published entrypoints load (statically or dynamically) as `dependencies`, the
// rest (test-only) as `devDependencies`.

import assert from "node:assert/strict";
import { denoInfo } from "./_test_deno_info.ts";

const root = new URL("./", import.meta.url);
const denoJson = JSON.parse(await Deno.readTextFile(new URL("deno.json", root))) as {
  name: string;
  version: string;
  license: string;
  exports: Record<string, string>;
  imports: Record<string, string>;
};
const packageJson = JSON.parse(await Deno.readTextFile(new URL("package.json", root))) as {
  name: string;
  version: string;
  license: string;
  type: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};

/** deno.json's npm imports as package name -> pinned version. */
function npmImports(): Map<string, string> {
  const pins = new Map<string, string>();
  for (const [name, target] of Object.entries(denoJson.imports)) {
    const pin = /^npm:(@?[^@]+)@([^/]+)$/.exec(target);
    assert.ok(pin, `deno.json imports "${name}": "${target}" is not a pinned npm: specifier`);
    assert.equal(pin[1], name, `deno.json imports "${name}" maps to another package: ${target}`);
    pins.set(name, pin[2]);
  }
  return pins;
}

/** The npm packages reached from every export of deno.json, dynamic imports included. */
async function packagesTheExportsLoad(): Promise<Set<string>> {
  const dir = await Deno.makeTempDir({ prefix: "conduit_exports_" });
  try {
    const all = `${dir}/all.ts`;
    await Deno.writeTextFile(
      all,
      Object.values(denoJson.exports)
        .map((path) => `import ${JSON.stringify(new URL(path, root).href)};\n`)
        .join(""),
    );
    const info = await denoInfo(all);
    const names = new Set<string>();
    for (const { specifier } of info.modules) {
      const npm = /^npm:\/?(@?[^@/]+(?:\/[^@/]+)?)@/.exec(specifier);
      if (npm) names.add(npm[1]);
    }
    return names;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("package.json: the npm packages and pins of deno.json's imports, no others", () => {
  const pins = npmImports();
  const listed = { ...packageJson.dependencies, ...packageJson.devDependencies };
  assert.deepEqual(
    Object.fromEntries(Object.entries(listed).sort()),
    Object.fromEntries([...pins].sort()),
    "package.json (dependencies + devDependencies) must pin exactly deno.json's imports",
  );
});

Deno.test("package.json: what the entrypoints load are dependencies, the rest dev", async () => {
  const loaded = await packagesTheExportsLoad();
  const runtime = [...npmImports().keys()].filter((name) => loaded.has(name)).sort();
  assert.deepEqual(Object.keys(packageJson.dependencies ?? {}).sort(), runtime);
});

Deno.test("package.json: an ES module package named like deno.json", () => {
  assert.equal(packageJson.type, "module");
  assert.equal(packageJson.name, denoJson.name);
  assert.equal(packageJson.version, denoJson.version);
  assert.equal(packageJson.license, denoJson.license);
});
