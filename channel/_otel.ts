// The runtime's OpenTelemetry, as conduit finds it: in the OpenTelemetry API's global registry
// (`Symbol.for("opentelemetry.js.api.1")`), where Deno puts its own tracer, context manager,
// propagator and meter providers when it exports telemetry (`OTEL_DENO=true`), and where an
// OpenTelemetry SDK registered by the program puts its own. Reading the registry needs no
// package and no permission; absent, telemetry is off and nothing more is loaded.
//
// Also the call context of pools: a pool sends a call later, from another context, and its
// attempts belong to the context the call was made in.

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
