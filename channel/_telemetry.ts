// OpenTelemetry for channels, through the runtime's own providers (see _otel.ts): a call is a
// client span on the caller and a server span on the handler's side (RPC semantic
// conventions), the W3C trace context travels in the call's headers (`traceparent`,
// `tracestate`), and the handler runs inside the propagated context, so the spans it starts and
// the `fetch` calls it makes join the caller's trace. Durations go to a histogram per side,
// calls in flight and the bytes channels send and receive to observable counters (read when the
// meter exports, so a call pays only for a count). Loaded only when the runtime traces
// (channel.ts decides).
//
// What the peer chooses never makes metric series without bound: a handler object that serves
// any name (a JSON-RPC catch-all) sees the peer's method names, and a caller sees the peer's
// error names. Each side keeps the first MAX_KEPT_METHODS methods and MAX_KEPT_STATUSES error
// names it meets, none longer than MAX_KEPT_NAME_LENGTH; its metrics report the others as
// `_OTHER` (their spans keep their names).
// The trace context goes with a call only when it fits beside the call's own headers and key
// (docs/protocol.md §6): telemetry never makes a call fail.

import { callMetaBody } from "../protocol/format.ts";
import type { OtelApi, OtelContext, OtelMeter, OtelSpan } from "./_otel.ts";
import type { Interceptor, OutgoingCallInfo } from "./types.ts";

/** The key under which OpenTelemetry contexts hold their span (the API's own). */
const SPAN_KEY = Symbol.for("OpenTelemetry Context Key SPAN");
const SPAN_KIND_SERVER = 1;
const SPAN_KIND_CLIENT = 2;
const STATUS_ERROR = 2;
/** Methods a side's metrics name; past this, they name others {@linkcode OTHER}. */
const MAX_KEPT_METHODS = 1024;
/** Error names a side's metrics give as `rpc.status`; past this, they give {@linkcode OTHER}. */
const MAX_KEPT_STATUSES = 64;
/** The longest method or error name metrics give; longer ones are {@linkcode OTHER}. */
const MAX_KEPT_NAME_LENGTH = 256;
/** What metrics say for a method or an error name past those kept. */
const OTHER = "_OTHER";

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
  /** The attributes of the methods kept (at most MAX_KEPT_METHODS). */
  readonly methods: Map<string, MethodAttributes>;
  /** The metric attributes of every other method. */
  readonly other: MethodAttributes;
  /** The error names kept as `rpc.status` (at most MAX_KEPT_STATUSES). */
  readonly statuses: Set<string>;
}

/** A method's span attributes, its metric attributes, and those of its successful outcome. */
interface MethodAttributes {
  readonly span: Attributes;
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
  const client = side(meter, system, "client", "Duration of calls this side made");
  const server = side(meter, system, "server", "Duration of calls this side served");
  const interceptor: Interceptor = {
    call: (call, next) => {
      const attributes = attributesOf(client, system, call.method);
      const parent = api.context.active();
      const span = tracer.startSpan(
        call.method,
        { kind: SPAN_KIND_CLIENT, attributes: attributes.span },
        parent,
      );
      const active = parent.setValue(SPAN_KEY, span);
      inject(api, active, call);
      return measured(api, span, active, attributes, client, () => next(call));
    },
    handle: (call, next) => {
      const attributes = attributesOf(server, system, call.method);
      const parent = api.propagation.extract(api.context.active(), call.context.headers, getter);
      const span = tracer.startSpan(
        call.method,
        { kind: SPAN_KIND_SERVER, attributes: attributes.span },
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

/** The attributes of `method` on `side`: its own when kept, else those of other methods. */
function attributesOf(side: Side, system: string, method: string): MethodAttributes {
  const kept = side.methods.get(method);
  if (kept !== undefined) return kept;
  const span = { "rpc.system": system, "rpc.method": method };
  if (side.methods.size >= MAX_KEPT_METHODS || method.length > MAX_KEPT_NAME_LENGTH) {
    return { ...side.other, span };
  }
  const attributes = { span, call: span, ok: { ...span, "rpc.status": "ok" } };
  side.methods.set(method, attributes);
  return attributes;
}

/**
 * Puts the trace context of `active` in the call's headers when it fits beside them and the
 * call's key and attempt (the limits of docs/protocol.md §6); else the call goes without it.
 */
function inject(api: OtelApi, active: OtelContext, call: OutgoingCallInfo): void {
  const context: Record<string, string> = {};
  api.propagation.inject(active, context, setter);
  let any = false;
  for (const _ in context) any = true;
  if (!any) return;
  const headers = call.headers;
  const options = call.options;
  let own = false;
  for (const _ in headers) own = true;
  // The trace context alone always fits: only a call with headers or a key of its own is checked.
  if (!own && options.key === undefined) return void Object.assign(headers, context);
  try {
    callMetaBody({
      key: options.key,
      attempt: options.attempt,
      headers: { ...headers, ...context },
    });
  } catch {
    return;
  }
  Object.assign(headers, context);
}

function side(meter: OtelMeter | undefined, system: string, name: string, what: string): Side {
  const inFlight = new Map<Attributes, number>();
  const call = { "rpc.system": system, "rpc.method": OTHER };
  const other = { span: call, call, ok: { ...call, "rpc.status": "ok" } };
  meter?.createObservableUpDownCounter(`rpc.${name}.in_flight`, {
    description: `Calls this side ${name === "client" ? "made" : "serves"} that have not settled`,
  }).addCallback((result) => {
    for (const [attributes, count] of inFlight) result.observe(count, attributes);
  });
  const duration = meter?.createHistogram(`rpc.${name}.duration`, {
    description: `${what}, until it settled`,
    unit: "ms",
  });
  return { duration, inFlight, methods: new Map(), other, statuses: new Set() };
}

/** The `rpc.status` of a failure with `error` on `side`. */
function statusOf(side: Side, error: unknown): string {
  if (!(error instanceof Error)) return "error";
  const name = String(error.name);
  const statuses = side.statuses;
  if (statuses.has(name)) return name;
  if (statuses.size >= MAX_KEPT_STATUSES || name.length > MAX_KEPT_NAME_LENGTH) return OTHER;
  statuses.add(name);
  return name;
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
      outcome = { ...attributes.call, "rpc.status": statusOf(side, error) };
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({
        code: STATUS_ERROR,
        message: error instanceof Error ? error.message : String(error),
      });
    }
    span.end();
    // Idle methods stay at 0: there are at most MAX_KEPT_METHODS of them, and `_OTHER`.
    inFlight.set(attributes.call, inFlight.get(attributes.call)! - 1);
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
