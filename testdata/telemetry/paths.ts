// The second program of telemetry_test.ts, run with OTEL_DENO=true: in a span of its own, it
// calls a thread worker, whose handler calls this process back, whose handler calls a serve()
// server over a Unix socket, whose handler calls a JSON-RPC (MCP dialect) peer, whose handler
// fetches from a Deno.serve server. Prints the root's trace id and the trace id each handler
// ran in.
import { trace } from "@opentelemetry/api";
import { openChannel } from "../../channel/channel.ts";
import { serve } from "../../channel/serve.ts";
import { jsonCodec } from "../../codecs/json.ts";
import { openJsonRpc } from "../../jsonrpc/mod.ts";
import { memoryPair } from "../../transports/memory.ts";
import { connectUnix, listenUnix } from "../../transports/unix.ts";
import { spawnWorker } from "../../workers/spawn_worker.ts";
import type { TelemetryThreadApi } from "./thread.ts";

const traceId = () => trace.getActiveSpan()?.spanContext().traceId ?? "none";

// An HTTP server the JSON-RPC handler fetches from: Deno's own spans, in the same trace.
const http = Deno.serve(
  { port: 0, hostname: "127.0.0.1", onListen: () => {} },
  () => new Response(traceId()),
);

// The JSON-RPC peer, over a memory pair.
const [rpcA, rpcB] = memoryPair();
const [rpcServer, rpcClient] = await Promise.all([
  openJsonRpc(rpcA, {
    framing: "ndjson",
    handlers: {
      rpcLookup: async ({ n }: { n: number }) => {
        const fetched = await (await fetch(`http://127.0.0.1:${http.addr.port}/`)).text();
        return { n: n * 10, traceId: traceId(), fetched };
      },
    },
  }),
  openJsonRpc<{
    rpcLookup(p: { n: number }): { n: number; traceId: string; fetched: string };
  }>(rpcB, {
    framing: "ndjson",
  }),
]);

// The serve() server, over a Unix socket, whose handler calls the JSON-RPC peer.
const dir = await Deno.makeTempDir({ prefix: "conduit-telemetry" });
const server = serve(await listenUnix(`${dir}/s`), {
  codec: jsonCodec(),
  handlers: {
    served: async (n: number) => {
      const looked = await rpcClient.remote.rpcLookup({ n: n + 1 });
      return { n: looked.n, traceIds: [traceId(), looked.traceId, looked.fetched] };
    },
  },
});
const client = await openChannel<{ served(n: number): { n: number; traceIds: string[] } }>(
  await connectUnix(`${dir}/s`),
  { codec: jsonCodec() },
);

// The thread worker, whose handler calls back `viaServe`.
await using worker = await spawnWorker<TelemetryThreadApi>(
  new URL("./thread.ts", import.meta.url),
  {
    thread: true,
    handlers: {
      viaServe: async (n: number) => {
        const served = await client.remote.served(n + 1);
        return { n: served.n, traceIds: [traceId(), ...served.traceIds] };
      },
    },
  },
);

const result = await trace.getTracer("paths").startActiveSpan("root", async (span) => {
  try {
    return { ...(await worker.remote.hop(1)), traceId: traceId() };
  } finally {
    span.end();
  }
});
console.log(JSON.stringify(result));
await client.close();
await server.close();
await Promise.all([rpcClient.close(), rpcServer.close()]);
await http.shutdown();
await Deno.remove(dir, { recursive: true });
