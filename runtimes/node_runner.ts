// The cross-runtime cases (_cases.ts and the _*_cases.ts beside it) on Node's runner:
// `node --test runtimes/node_runner.ts` (Node >= 22, which strips the types). Not named
// `_test.ts`: `deno test` runs deno_test.ts.

import { test } from "node:test";
import { nodeAndBunCases } from "./_all_cases.ts";

for (const { name, fn } of nodeAndBunCases) test(`runtimes (node): ${name}`, fn);
