// The program of telemetry_test.ts, run with OTEL_DENO=true: a Deno.serve request whose
// handler calls a pool's worker process, which calls this process back, whose handler calls a
// service over NATS (NATS_URL). Prints the trace ids each step saw.
import { trace } from "@opentelemetry/api";
import { connect } from "@nats-io/transport-node";
import { openChannel } from "../../channel/channel.ts";
import { jsonCodec } from "../../codecs/json.ts";
import { listenNats } from "../../transports/nats.ts";
import { NatsServicePool } from "../../workers/nats_service_pool.ts";
import { WorkerPool } from "../../workers/worker_pool.ts";
import type { TelemetryWorkerApi } from "./worker.ts";

const traceId = () => trace.getActiveSpan()?.spanContext().traceId ?? "none";

// The NATS service, on a connection of its own.
const serviceNc = await connect({ servers: Deno.env.get("NATS_URL")! });
const listener = await listenNats(serviceNc, "telemetry-svc", { instance: "svc-1" });
const serviceHandlers = { lookup: (n: number) => ({ n: n * 10, traceId: traceId() }) };
const serving = (async () => {
  const channels = [];
  for await (const transport of listener) {
    channels.push(openChannel(transport, { codec: jsonCodec(), handlers: serviceHandlers }));
  }
  for (const channel of channels) await (await channel.catch(() => undefined))?.close();
})();

const clientNc = await connect({ servers: Deno.env.get("NATS_URL")! });
const service = new NatsServicePool<typeof serviceHandlers>(clientNc, "telemetry-svc", {
  codec: jsonCodec(),
});

const pool = new WorkerPool<TelemetryWorkerApi>(new URL("./worker.ts", import.meta.url), {
  size: 1,
  env: { OTEL_SERVICE_NAME: "conduit-test-worker" },
  handlers: {
    fromParent: async (n: number) => {
      const looked = await service.remote.lookup(n + 1);
      return { n: looked.n, traceId: traceId(), serviceTraceId: looked.traceId };
    },
  },
});
const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async () => {
  const result = await pool.remote.work(1);
  const ticks = [];
  for await (const tick of pool.remote.ticks({ count: 3, ms: 100 })) ticks.push(tick);
  return Response.json({ ...result, ticks, traceId: traceId() });
});
const response = await fetch(`http://127.0.0.1:${server.addr.port}/`);
console.log(JSON.stringify(await response.json()));
await server.shutdown();
await pool.close();
await service.close();
await listener.close();
await serving;
await clientNc.close();
await serviceNc.close();
