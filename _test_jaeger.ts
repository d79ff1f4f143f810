// Test helper: a real Jaeger (v1.76.0's v2 binary, built by .ci/run into .tools/jaeger/) on
// loopback, on free ports, with in-memory storage: an OTLP/HTTP receiver to export to and the
// query API to read traces back. Metrics go through the same OTLP receiver to the collector's
// debug exporter, whose log is parsed back. A test without the binary is ignored with a message
// naming it.

const BINARY = new URL("./.tools/jaeger/bin/jaeger", import.meta.url);

/** A span as Jaeger's query API returns it, with its service and parent resolved. */
export interface JaegerSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentId: string | undefined;
  readonly service: string;
  readonly name: string;
  /** How long the span lasted, in microseconds. */
  readonly duration: number;
  readonly tags: Readonly<Record<string, unknown>>;
}

/** A running Jaeger. */
export interface Jaeger extends AsyncDisposable {
  /** Where to export OTLP/HTTP (`OTEL_EXPORTER_OTLP_ENDPOINT`). */
  readonly otlpEndpoint: string;
  /** The spans of the traces `service` took part in, waiting until `until` holds of them. */
  spans(service: string, until: (spans: JaegerSpan[]) => boolean): Promise<JaegerSpan[]>;
  /** The metric points received so far, waiting (up to 15 s) until `until` holds of them. */
  metrics(until: (points: MetricPoint[]) => boolean): Promise<MetricPoint[]>;
}

/** One data point of a metric as the collector received it. */
export interface MetricPoint {
  readonly service: string;
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
  /** A sum's or gauge's value; a histogram's count. */
  readonly value: number;
}

/** Whether the Jaeger binary is there; says on stderr which test skips when it is not. */
export function haveJaeger(test: string): boolean {
  try {
    Deno.statSync(BINARY);
    return true;
  } catch {
    console.error(
      `skipping "${test}": Jaeger is not installed (.ci/run builds ${BINARY.pathname})`,
    );
    return false;
  }
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Starts Jaeger; resolves once both its ports accept connections. */
export async function startJaeger(): Promise<Jaeger> {
  const [otlp, query, grpc] = [freePort(), freePort(), freePort()];
  const dir = await Deno.makeTempDir({ prefix: "conduit-jaeger" });
  const config = `${dir}/config.yaml`;
  await Deno.writeTextFile(
    config,
    `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: { receivers: [otlp], processors: [batch], exporters: [jaeger_storage_exporter] }
    metrics: { receivers: [otlp], exporters: [debug] }
  telemetry: { metrics: { level: none }, logs: { level: info } }
extensions:
  jaeger_query:
    storage: { traces: memory }
    http: { endpoint: "127.0.0.1:${query}" }
    grpc: { endpoint: "127.0.0.1:${grpc}" }
  jaeger_storage:
    backends: { memory: { memory: { max_traces: 10000 } } }
receivers:
  otlp: { protocols: { http: { endpoint: "127.0.0.1:${otlp}" } } }
processors:
  batch: { timeout: 100ms }
exporters:
  jaeger_storage_exporter: { trace_storage: memory }
  debug: { verbosity: detailed }
`,
  );
  const child = new Deno.Command(BINARY, {
    args: ["--config", config],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let log = "";
  const reading = (async () => {
    for (;;) {
      const { value, done } = await stderr.read();
      if (done) return;
      log += value;
    }
  })();
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* already gone */ }
    await child.status;
    await reading;
    await Deno.remove(dir, { recursive: true });
  };
  const deadline = Date.now() + 20_000;
  for (const port of [otlp, query]) {
    for (;;) {
      try {
        (await Deno.connect({ hostname: "127.0.0.1", port })).close();
        break;
      } catch {
        if (Date.now() > deadline) {
          await stop();
          throw new Error(`Jaeger did not listen on ${port} within 20 s:\n${log}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }
  return {
    otlpEndpoint: `http://127.0.0.1:${otlp}`,
    async spans(service, until) {
      const end = Date.now() + 15_000;
      let spans: JaegerSpan[] = [];
      while (Date.now() < end) {
        const response = await fetch(`http://127.0.0.1:${query}/api/traces?service=${service}`);
        spans = response.ok ? spansOf(await response.json()) : (await response.body?.cancel(), []);
        if (until(spans)) return spans;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      return spans;
    },
    async metrics(until) {
      const end = Date.now() + 15_000;
      let points = metricPoints(log);
      while (!until(points) && Date.now() < end) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        points = metricPoints(log);
      }
      return points;
    },
    [Symbol.asyncDispose]: stop,
  };
}

interface JaegerTrace {
  traceID: string;
  processes: Record<string, { serviceName: string }>;
  spans: {
    spanID: string;
    operationName: string;
    processID: string;
    references: { refType: string; spanID: string }[];
    duration: number;
    tags: { key: string; value: unknown }[];
  }[];
}

function spansOf(body: { data?: JaegerTrace[] }): JaegerSpan[] {
  return (body.data ?? []).flatMap((trace) =>
    trace.spans.map((span) => ({
      traceId: trace.traceID,
      spanId: span.spanID,
      parentId: span.references.find((ref) => ref.refType === "CHILD_OF")?.spanID,
      service: trace.processes[span.processID]?.serviceName ?? "?",
      name: span.operationName,
      duration: span.duration,
      tags: Object.fromEntries(span.tags.map((tag) => [tag.key, tag.value])),
    }))
  );
}

/** The data points in the debug exporter's detailed log. */
function metricPoints(log: string): MetricPoint[] {
  const points: MetricPoint[] = [];
  let service = "?";
  let name = "?";
  let attributes: Record<string, string> | undefined;
  let section = "";
  for (const line of log.split("\n")) {
    const member = /^\s+-> ([^:]+): (?:Str|Int|Double|Bool)?\(?(.*?)\)?$/.exec(line);
    if (line.startsWith("Resource attributes:")) section = "resource";
    else if (line.startsWith("Descriptor:")) section = "descriptor";
    else if (line.startsWith("Data point attributes:")) section = "point";
    else if (/DataPoints #\d+/.test(line)) {
      section = "";
      attributes = {};
    } else if (member !== null) {
      const [, key, value] = member;
      if (section === "resource" && key === "service.name") service = value;
      else if (section === "descriptor" && key === "Name") name = value;
      else if (section === "point" && attributes !== undefined) attributes[key] = value;
    } else if (attributes !== undefined && /^(Count|Value): /.test(line)) {
      points.push({ service, name, attributes, value: Number(line.split(": ")[1]) });
      attributes = undefined;
    }
  }
  return points;
}
