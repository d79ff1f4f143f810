// The cross-runtime cases (_cases.ts, _nats_cases.ts, _thread_cases.ts) on Deno's runner, with
// its sanitizers on. The same cases run under `node --test runtimes/node_runner.ts` and
// `bun test ./runtimes/bun_runner.ts`.

import { cases } from "./_cases.ts";
import { natsCases } from "./_nats_cases.ts";
import { threadCases } from "./_thread_cases.ts";

for (const { name, fn } of [...cases, ...natsCases, ...threadCases]) {
  Deno.test(`runtimes (deno): ${name}`, fn);
}
