// The cross-runtime cases (_cases.ts and the _*_cases.ts beside it) on Node's runner:
// `node --test runtimes/node_runner.ts` (Node >= 22, which strips the types). Not named
// `_test.ts`: `deno test` runs deno_test.ts.

import { test } from "node:test";
import { cases } from "./_cases.ts";
import { natsCases } from "./_nats_cases.ts";
import { threadCases } from "./_thread_cases.ts";
import { channelCases } from "./_channel_cases.ts";
import { socketCases } from "./_socket_cases.ts";
import { otelCases } from "./_otel_cases.ts";

for (
  const { name, fn } of [
    ...cases,
    ...channelCases,
    ...socketCases,
    ...natsCases,
    ...threadCases,
    ...otelCases,
  ]
) {
  test(`runtimes (node): ${name}`, fn);
}
