// The runtime's OpenTelemetry, as conduit finds it: in the OpenTelemetry API's global registry
// (`Symbol.for("opentelemetry.js.api.1")`), where Deno puts its own tracer, context manager,
// propagator and meter providers when it exports telemetry (`OTEL_DENO=true`), and where an
// OpenTelemetry SDK registered by the program puts its own. Reading the registry needs no
// package and no permission; absent, telemetry is off and nothing more is loaded.
//
// Also the call context of pools: a pool sends a call later, from another context, and its
// attempts belong to the context the call was made in.

import type { CallOptions } from "./types.ts";

/** An OpenTelemetry context: immutable, keyed by symbols. */
export interface OtelContext {
  getValue(key: symbol): unknown;
  setValue(key: symbol, value: unknown): OtelContext;
}

/** An OpenTelemetry span, as far as conduit uses it. */
export interface OtelSpan {
  setStatus(status: { code: number; message?: string }): void;
  recordException(exception: Error | string): void;
  end(): void;
}

/** A histogram, observable counters, and the meter that makes them. */
export interface OtelMeter {
  createHistogram(
    name: string,
    options: { description: string; unit?: string },
  ): { record(value: number, attributes: Readonly<Record<string, string>>): void };
  createObservableUpDownCounter(name: string, options: { description: string }): OtelObservable;
  createObservableCounter(name: string, options: { description: string }): OtelObservable;
}

/** An instrument the meter reads when it exports, through its callbacks. */
export interface OtelObservable {
  addCallback(
    callback: (
      result: { observe(value: number, attributes: Readonly<Record<string, string>>): void },
    ) => void,
  ): void;
}

/** The members of the registry conduit uses; `metrics` may be absent (no meter registered). */
export interface OtelApi {
  readonly trace: {
    getTracer(name: string): {
      startSpan(
        name: string,
        options: { kind: number; attributes: Readonly<Record<string, string>> },
        context: OtelContext,
      ): OtelSpan;
    };
  };
  readonly context: { active(): OtelContext; with<T>(context: OtelContext, fn: () => T): T };
  readonly propagation: {
    inject(
      context: OtelContext,
      carrier: Record<string, string>,
      setter: { set(carrier: Record<string, string>, key: string, value: string): void },
    ): void;
    extract(
      context: OtelContext,
      carrier: Readonly<Record<string, string>>,
      getter: {
        get(carrier: Readonly<Record<string, string>>, key: string): string | undefined;
        keys(carrier: Readonly<Record<string, string>>): string[];
      },
    ): OtelContext;
  };
  readonly metrics?: { getMeter(name: string): OtelMeter };
}

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

/** Where a call started later (by a pool) keeps the telemetry context it was made in. */
const CALL_CONTEXT: unique symbol = Symbol("conduit.callContext");

/**
 * `options` carrying the telemetry context active now, when the runtime traces: a pool sends
 * its calls later, from another context, and its attempts belong to this one.
 */
export function withCallContext(options: CallOptions | undefined): CallOptions | undefined {
  const api = otelApi();
  if (api === undefined) return options;
  return { ...options, [CALL_CONTEXT]: api.context.active() } as CallOptions;
}

/** Runs `fn` in the telemetry context `options` carry (see {@linkcode withCallContext}). */
export function inCallContext<T>(options: CallOptions | undefined, fn: () => T): T {
  const context = (options as { [CALL_CONTEXT]?: OtelContext } | undefined)?.[CALL_CONTEXT];
  return context === undefined ? fn() : otelApi()!.context.with(context, fn);
}
