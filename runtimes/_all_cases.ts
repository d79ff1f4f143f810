// Every runner's cases, in order: those each runtime runs, and the OpenTelemetry ones Node and
// Bun run (on Deno the runtime itself traces, and telemetry_test.ts checks it).

import { cases, type RuntimeCase } from "./_cases.ts";
import { runtimeCases } from "./_runtime_cases.ts";
import { channelCases } from "./_channel_cases.ts";
import { socketCases } from "./_socket_cases.ts";
import { hostileSocketCases } from "./_hostile_socket_cases.ts";
import { natsCases } from "./_nats_cases.ts";
import { threadCases } from "./_thread_cases.ts";
import { otelCases } from "./_otel_cases.ts";

/** The cases every runner registers. */
export const sharedCases: RuntimeCase[] = [
  ...runtimeCases,
  ...cases,
  ...channelCases,
  ...socketCases,
  ...hostileSocketCases,
  ...natsCases,
  ...threadCases,
];

/** The cases the Node and Bun runners register: the shared ones and OpenTelemetry's. */
export const nodeAndBunCases: RuntimeCase[] = [...sharedCases, ...otelCases];
