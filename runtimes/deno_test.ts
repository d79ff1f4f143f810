// The cross-runtime cases (_cases.ts and the _*_cases.ts beside it) on Deno's runner, with
// its sanitizers on. The same cases run under `node --test runtimes/node_runner.ts` and
// `bun test ./runtimes/bun_runner.ts`.

import { sharedCases } from "./_all_cases.ts";

for (const { name, fn } of sharedCases) Deno.test(`runtimes (deno): ${name}`, fn);
