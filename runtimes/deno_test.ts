// The cross-runtime cases (_cases.ts and the _*_cases.ts beside it) on Deno's runner, with
// its sanitizers on. The same cases run under `node --test runtimes/node_runner.ts` and
// `bun test ./runtimes/bun_runner.ts`.

import { cases } from "./_cases.ts";
import { natsCases } from "./_nats_cases.ts";
import { threadCases } from "./_thread_cases.ts";
import { channelCases } from "./_channel_cases.ts";
import { socketCases } from "./_socket_cases.ts";

for (
  const { name, fn } of [...cases, ...channelCases, ...socketCases, ...natsCases, ...threadCases]
) {
  Deno.test(`runtimes (deno): ${name}`, fn);
}
