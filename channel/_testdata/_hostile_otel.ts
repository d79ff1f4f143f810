// A stand-in for the runtime's OpenTelemetry, installed where the OpenTelemetry API keeps its
// providers (see ../_otel.ts), so tests can see the spans conduit starts and what it records in
// the meter without an exporter. Its context follows synchronous code only (enough for what
// conduit does inside `context.with`).

const REGISTRY = Symbol.for("opentelemetry.js.api.1");
const SPAN_KEY = Symbol.for("OpenTelemetry Context Key SPAN");
/** The traceparent the fake propagator writes. */
export const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/** A context: immutable, keyed by symbols. */
class FakeContext {
  readonly #values: Map<symbol, unknown>;
  constructor(values = new Map<symbol, unknown>()) {
    this.#values = values;
  }
  getValue(key: symbol): unknown {
    return this.#values.get(key);
  }
  setValue(key: symbol, value: unknown): FakeContext {
    return new FakeContext(new Map(this.#values).set(key, value));
  }
  deleteValue(key: symbol): FakeContext {
    const values = new Map(this.#values);
    values.delete(key);
    return new FakeContext(values);
  }
}

/** A span the fake tracer started. */
export interface FakeSpan {
  readonly name: string;
  readonly kind: number;
  readonly attributes: Readonly<Record<string, string>>;
  status: { code: number; message?: string } | undefined;
  ended: number;
}

/** What the fake meter saw. */
export interface FakeTelemetry extends Disposable {
  readonly spans: FakeSpan[];
  /** Each histogram's recorded points' attributes, by instrument name. */
  readonly recorded: Map<string, Readonly<Record<string, string>>[]>;
  /** Reads the observable instruments now, as an export does: name → observed points. */
  observe(): Map<string, { value: number; attributes: Readonly<Record<string, string>> }[]>;
}

/** Installs the fake until disposed; throws when a registry is there already. */
export function installFakeTelemetry(): FakeTelemetry {
  const global = globalThis as { [REGISTRY]?: unknown };
  if (global[REGISTRY] !== undefined) throw new Error("an OpenTelemetry registry is installed");
  const spans: FakeSpan[] = [];
  const recorded = new Map<string, Readonly<Record<string, string>>[]>();
  const observables = new Map<
    string,
    ((result: { observe(value: number, attributes: Record<string, string>): void }) => void)[]
  >();
  let active = new FakeContext();
  const observable = (name: string) => ({
    addCallback(
      callback: (
        result: { observe(value: number, attributes: Record<string, string>): void },
      ) => void,
    ) {
      observables.set(name, [...(observables.get(name) ?? []), callback]);
    },
  });
  global[REGISTRY] = {
    version: "1.9.0",
    trace: {
      getTracer: () => ({
        startSpan(
          name: string,
          options: { kind: number; attributes: Record<string, string> },
        ) {
          const span: FakeSpan = {
            name,
            kind: options.kind,
            attributes: { ...options.attributes },
            status: undefined,
            ended: 0,
          };
          spans.push(span);
          return {
            setStatus: (status: { code: number; message?: string }) => span.status = status,
            recordException: () => {},
            end: () => void span.ended++,
          };
        },
      }),
    },
    context: {
      active: () => active,
      with<T>(context: FakeContext, fn: () => T): T {
        const before = active;
        active = context;
        try {
          return fn();
        } finally {
          active = before;
        }
      },
    },
    propagation: {
      // A W3C propagator writes a traceparent of 55 characters for a context with a span.
      inject(
        context: FakeContext,
        carrier: Record<string, string>,
        setter: { set(carrier: Record<string, string>, key: string, value: string): void },
      ) {
        if (context.getValue(SPAN_KEY) === undefined) return;
        setter.set(carrier, "traceparent", TRACEPARENT);
      },
      extract: (context: FakeContext) => context,
    },
    metrics: {
      getMeter: () => ({
        createHistogram: (name: string) => ({
          record(_value: number, attributes: Record<string, string>) {
            recorded.set(name, [...(recorded.get(name) ?? []), { ...attributes }]);
          },
        }),
        createObservableUpDownCounter: observable,
        createObservableCounter: observable,
      }),
    },
  };
  return {
    spans,
    recorded,
    observe() {
      const points = new Map<
        string,
        { value: number; attributes: Readonly<Record<string, string>> }[]
      >();
      for (const [name, callbacks] of observables) {
        const list: { value: number; attributes: Readonly<Record<string, string>> }[] = [];
        for (const callback of callbacks) {
          callback({ observe: (value, attributes) => list.push({ value, attributes }) });
        }
        points.set(name, list);
      }
      return points;
    },
    [Symbol.dispose]() {
      delete global[REGISTRY];
    },
  };
}
