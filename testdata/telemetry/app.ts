// The program of telemetry_test.ts, run with OTEL_DENO=true: a Deno.serve request whose
// handler calls a pool's worker process, which calls this process back. Prints its trace id.
import { trace } from "@opentelemetry/api";
import { WorkerPool } from "../../workers/worker_pool.ts";
import type { TelemetryWorkerApi } from "./worker.ts";

const pool = new WorkerPool<TelemetryWorkerApi>(new URL("./worker.ts", import.meta.url), {
  size: 1,
  env: { OTEL_SERVICE_NAME: "conduit-test-worker" },
  handlers: {
    fromParent: (n: number) => {
      const span = trace.getActiveSpan();
      return { n: n + 1, traceId: span?.spanContext().traceId ?? "none" };
    },
  },
});
const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async () => {
  const result = await pool.remote.work(1);
  return Response.json({ ...result, traceId: trace.getActiveSpan()?.spanContext().traceId });
});
const response = await fetch(`http://127.0.0.1:${server.addr.port}/`);
console.log(JSON.stringify(await response.json()));
await server.shutdown();
await pool.close();
