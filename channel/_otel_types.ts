// The OpenTelemetry API as far as conduit uses it: types only, so that a channel that checks
// whether the runtime traces (_otel.ts) loads none of it.

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
