// The runtime's OpenTelemetry, as conduit finds it: in the OpenTelemetry API's global registry
// (`Symbol.for("opentelemetry.js.api.1")`), where Deno puts its own tracer, context manager,
// propagator and meter providers when it exports telemetry (`OTEL_DENO=true`), and where an
// OpenTelemetry SDK registered by the program puts its own. Reading the registry needs no
// package and no permission; absent, telemetry is off and nothing more is loaded.
//
// Also the call context of pools: a pool sends a call later, from another context, and its
// attempts belong to the context the call was made in.

import type { OtelApi, OtelContext } from "./_otel_types.ts";

export type { OtelApi, OtelContext, OtelMeter, OtelObservable, OtelSpan } from "./_otel_types.ts";

const REGISTRY = Symbol.for("opentelemetry.js.api.1");

/**
 * The runtime's OpenTelemetry when it traces (a tracer provider, context manager and
 * propagator are registered), else undefined.
 */
export function otelApi(): OtelApi | undefined {
  const api = (globalThis as { [REGISTRY]?: Partial<OtelApi> })[REGISTRY];
  return api?.trace !== undefined && api.context !== undefined && api.propagation !== undefined
    ? api as OtelApi
    : undefined;
}

/**
 * The telemetry context active now, when the runtime traces: a pool sends a call later, from
 * another context, and keeps this one with the call for its attempts (see {@linkcode inContext}).
 */
export function activeContext(): OtelContext | undefined {
  return otelApi()?.context.active();
}

/** Runs `fn` in `context` (from {@linkcode activeContext}), or as it is without one. */
export function inContext<T>(context: OtelContext | undefined, fn: () => T): T {
  return context === undefined ? fn() : otelApi()!.context.with(context, fn);
}
