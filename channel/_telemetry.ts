// OpenTelemetry for channels, through the runtime's own providers (see _otel.ts): a call is a
// client span on the caller and a server span on the handler's side (RPC semantic
// conventions), the W3C trace context travels in the call's headers (`traceparent`,
// `tracestate`), and the handler runs inside the propagated context, so the spans it starts and
// the `fetch` calls it makes join the caller's trace. Durations go to a histogram per side,
// calls in flight and the bytes channels send and receive to observable counters (read when the
// meter exports, so a call pays only for a count). Loaded only when the runtime traces
// (channel.ts decides).

import type { OtelApi, OtelContext, OtelMeter, OtelSpan } from "./_otel.ts";
import type { Interceptor } from "./types.ts";

/** The key under which OpenTelemetry contexts hold their span (the API's own). */
const SPAN_KEY = Symbol.for("OpenTelemetry Context Key SPAN");
const SPAN_KIND_SERVER = 1;
const SPAN_KIND_CLIENT = 2;
const STATUS_ERROR = 2;
/** Methods whose attribute objects are kept; past this, each call makes its own. */
const MAX_KEPT_METHODS = 1024;

type Attributes = Readonly<Record<string, string>>;
type Histogram = ReturnType<OtelMeter["createHistogram"]>;

const setter = {
  set(carrier: Record<string, string>, key: string, value: string): void {
    carrier[key] = value;
  },
};
const getter = {
  get: (carrier: Attributes, key: string): string | undefined => carrier[key],
  keys: (carrier: Attributes): string[] => Object.keys(carrier),
};

/** One side's instruments: its duration histogram and in-flight counts. */
interface Side {
  readonly duration: Histogram | undefined;
  /** Calls in flight by their attributes, observed when the meter exports. */
  readonly inFlight: Map<Attributes, number>;
}

/** A method's attributes, and those of its successful outcome. */
interface MethodAttributes {
  readonly call: Attributes;
  readonly ok: Attributes;
}

/** An interceptor made for the providers it was made with: one registered later gets its own. */
interface KeptInterceptor {
  readonly trace: OtelApi["trace"];
  readonly metrics: OtelApi["metrics"];
  readonly interceptor: Interceptor;
}

const interceptors = new Map<string, KeptInterceptor>();

/** The interceptor that traces and measures calls of a channel speaking `system`. */
export function telemetryInterceptor(api: OtelApi, system: "conduit" | "jsonrpc"): Interceptor {
  const kept = interceptors.get(system);
  if (kept !== undefined && kept.trace === api.trace && kept.metrics === api.metrics) {
    return kept.interceptor;
  }
  const tracer = api.trace.getTracer("conduit");
  const meter = api.metrics?.getMeter("conduit");
  const client = side(meter, "client", "Duration of calls this side made");
  const server = side(meter, "server", "Duration of calls this side served");
  const methods = new Map<string, MethodAttributes>();
  const attributesOf = (method: string): MethodAttributes => {
    let attributes = methods.get(method);
    if (attributes === undefined) {
      const call = { "rpc.system": system, "rpc.method": method };
      attributes = { call, ok: { ...call, "rpc.status": "ok" } };
      if (methods.size < MAX_KEPT_METHODS) methods.set(method, attributes);
    }
    return attributes;
  };
  const interceptor: Interceptor = {
    call: (call, next) => {
      const attributes = attributesOf(call.method);
      const parent = api.context.active();
      const span = tracer.startSpan(
        call.method,
        { kind: SPAN_KIND_CLIENT, attributes: attributes.call },
        parent,
      );
      const active = parent.setValue(SPAN_KEY, span);
      api.propagation.inject(active, call.headers, setter);
      return measured(api, span, active, attributes, client, () => next(call));
    },
    handle: (call, next) => {
      const attributes = attributesOf(call.method);
      const parent = api.propagation.extract(api.context.active(), call.context.headers, getter);
      const span = tracer.startSpan(
        call.method,
        { kind: SPAN_KIND_SERVER, attributes: attributes.call },
        parent,
      );
      return measured(
        api,
        span,
        parent.setValue(SPAN_KEY, span),
        attributes,
        server,
        () => next(call),
      );
    },
  };
  interceptors.set(system, { trace: api.trace, metrics: api.metrics, interceptor });
  return interceptor;
}

function side(meter: OtelMeter | undefined, name: string, what: string): Side {
  const inFlight = new Map<Attributes, number>();
  meter?.createObservableUpDownCounter(`rpc.${name}.in_flight`, {
    description: `Calls this side ${name === "client" ? "made" : "serves"} that have not settled`,
  }).addCallback((result) => {
    for (const [attributes, count] of inFlight) result.observe(count, attributes);
  });
  const duration = meter?.createHistogram(`rpc.${name}.duration`, {
    description: `${what}, until it settled`,
    unit: "ms",
  });
  return { duration, inFlight };
}

/**
 * Runs `run` inside `active` (whose span is `span`), recording its outcome and duration. When
 * it returns a stream, the call lasts until the stream ends, fails or is cancelled.
 */
async function measured(
  api: OtelApi,
  span: OtelSpan,
  active: OtelContext,
  attributes: MethodAttributes,
  side: Side,
  run: () => Promise<unknown>,
): Promise<unknown> {
  const started = performance.now();
  const inFlight = side.inFlight;
  inFlight.set(attributes.call, (inFlight.get(attributes.call) ?? 0) + 1);
  let over = false;
  const finish = (failed: boolean, error?: unknown): void => {
    if (over) return;
    over = true;
    let outcome = attributes.ok;
    if (failed) {
      outcome = { ...attributes.call, "rpc.status": error instanceof Error ? error.name : "error" };
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({
        code: STATUS_ERROR,
        message: error instanceof Error ? error.message : String(error),
      });
    }
    span.end();
    const left = inFlight.get(attributes.call)! - 1;
    // Idle methods stay at 0, unless there are more than are kept (then they leave).
    if (left === 0 && inFlight.size > MAX_KEPT_METHODS) inFlight.delete(attributes.call);
    else inFlight.set(attributes.call, left);
    side.duration?.record(performance.now() - started, outcome);
  };
  let result: unknown;
  try {
    result = await api.context.with(active, run);
  } catch (error) {
    finish(true, error);
    throw error;
  }
  if (typeof result === "object" && result !== null && Symbol.asyncIterator in result) {
    return finishedWith(result as AsyncIterable<unknown>, finish);
  }
  finish(false);
  return result;
}

/** `source`, calling `finish` once when it ends, fails or is closed early (read or not). */
function finishedWith(
  source: AsyncIterable<unknown>,
  finish: (failed: boolean, error?: unknown) => void,
): AsyncIterable<unknown> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<unknown> {
      const iterator = source[Symbol.asyncIterator]();
      return {
        async next(): Promise<IteratorResult<unknown>> {
          try {
            const item = await iterator.next();
            if (item.done) finish(false);
            return item;
          } catch (error) {
            finish(true, error);
            throw error;
          }
        },
        async return(value?: unknown): Promise<IteratorResult<unknown>> {
          try {
            return await iterator.return?.(value) ?? { done: true, value };
          } finally {
            finish(false);
          }
        },
      };
    },
  };
}

/** A channel whose bytes the meter reads, until it is closed. */
interface Counted {
  readonly system: string;
  readonly traffic: () => { readonly sent: number; readonly received: number };
  closed: boolean;
}

const counted = new Set<Counted>();
/** The bytes of closed channels, by system, once the meter has read them last. */
const closedTotals = new Map<string, { sent: number; received: number }>();
/** The meter providers whose meters count the bytes already (one pair of counters each). */
const trafficObservers = new WeakSet<object>();

/**
 * Reports the bytes a channel sends and receives, summed by `system`, as
 * `conduit.channel.sent_bytes` and `conduit.channel.received_bytes` (frame headers included).
 */
export function observeTraffic(
  api: OtelApi,
  system: "conduit" | "jsonrpc",
  traffic: () => { readonly sent: number; readonly received: number },
  closed: Promise<unknown>,
): void {
  const provider = api.metrics;
  const meter = provider?.getMeter("conduit");
  if (provider === undefined || meter === undefined) return;
  const channel: Counted = { system, traffic, closed: false };
  const over = () => void (channel.closed = true);
  closed.then(over, over);
  counted.add(channel);
  if (trafficObservers.has(provider)) return;
  trafficObservers.add(provider);
  const totals = (): Map<string, { sent: number; received: number }> => {
    const sums = new Map<string, { sent: number; received: number }>();
    for (const [name, total] of closedTotals) sums.set(name, { ...total });
    for (const one of counted) {
      const { sent, received } = one.traffic();
      const sum = sums.get(one.system) ?? { sent: 0, received: 0 };
      sum.sent += sent;
      sum.received += received;
      sums.set(one.system, sum);
      if (one.closed) {
        // Its last count joins the closed channels' totals, and it leaves.
        const total = closedTotals.get(one.system) ?? { sent: 0, received: 0 };
        total.sent += sent;
        total.received += received;
        closedTotals.set(one.system, total);
        counted.delete(one);
      }
    }
    return sums;
  };
  for (const direction of ["sent", "received"] as const) {
    meter.createObservableCounter(`conduit.channel.${direction}_bytes`, {
      description: `Bytes the channels ${direction}, frame headers included`,
    }).addCallback((result) => {
      for (const [name, sum] of totals()) result.observe(sum[direction], { "rpc.system": name });
    });
  }
}
