// conduit's Node build, for the report's `conduit node` row: every TypeScript module of the
// checkout stripped to JavaScript once (node:module's stripTypeScriptTypes, Node >= 23.2), with
// relative `.ts` specifiers (imports and `new URL("./x.ts", import.meta.url)`) turned into
// `.js`, as a JavaScript package ships it. Node strips the types of `.ts` files it loads
// itself, but on every start, and that alone takes most of a worker's start-up.
//
//   node bench/report/children/node_build.mjs <checkout> <out dir>

import { stripTypeScriptTypes } from "node:module";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import process from "node:process";

const [src, out] = process.argv.slice(2);
const SKIP = /^(\.git|\.tools|\.ci|node_modules|docs|interop|testdata|examples)$/;
const SPECIFIER = /((?:from|import|new URL)\s*\(?\s*["'])(\.{1,2}\/[^"']+)\.ts(["'])/g;

function build(dir) {
  for (const name of readdirSync(join(src, dir))) {
    if (SKIP.test(name)) continue;
    const path = join(dir, name);
    if (statSync(join(src, path)).isDirectory()) {
      build(path);
    } else if (name.endsWith(".ts") && !name.endsWith("_test.ts")) {
      let code;
      try {
        code = stripTypeScriptTypes(readFileSync(join(src, path), "utf8"), { mode: "strip" });
      } catch {
        continue; // A test or benchmark helper with syntax only a type-checker erases.
      }
      mkdirSync(join(out, dir), { recursive: true });
      writeFileSync(join(out, path.replace(/\.ts$/, ".js")), code.replace(SPECIFIER, "$1$2.js$3"));
    } else if (name.endsWith(".json") || name.endsWith(".mjs")) {
      mkdirSync(join(out, dir), { recursive: true });
      writeFileSync(join(out, path), readFileSync(join(src, path)));
    }
  }
}

process.removeAllListeners("warning"); // stripTypeScriptTypes is "experimental": no banner
build("");
if (!existsSync(join(out, "node_modules"))) {
  symlinkSync(join(src, "node_modules"), join(out, "node_modules"));
}
writeFileSync(join(out, "package.json"), '{ "type": "module" }\n');
