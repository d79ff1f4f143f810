// A JSON-RPC peer knows nothing of maxInFlight: requests past it are held (and reading
// stops) rather than refused, a batch included, and every one is answered.

import assert from "node:assert/strict";
import { NdjsonDecoderStream } from "../framing/mod.ts";
import { memoryPair } from "../transports/memory.ts";
import { openJsonRpc } from "./mod.ts";

Deno.test("jsonrpc: a batch of more requests than maxInFlight is answered whole", async () => {
  const [a, b] = memoryPair();
  const channel = await openJsonRpc(a, {
    framing: "ndjson",
    maxInFlight: 2,
    handlers: { echo: (params: [number]) => params[0] },
  });
  const writer = b.writable.getWriter();
  const reader = b.readable.pipeThrough(new NdjsonDecoderStream()).getReader();
  const batch = Array.from({ length: 7 }, (_, i) => ({
    jsonrpc: "2.0",
    id: i,
    method: "echo",
    params: [i],
  }));
  await writer.write(new TextEncoder().encode(`${JSON.stringify(batch)}\n`));
  const { value } = await reader.read();
  const answers = JSON.parse(new TextDecoder().decode(value)) as { id: number; result: number }[];
  assert.deepEqual(
    answers.map(({ id, result }) => [id, result]).sort((x, y) => x[0] - y[0]),
    batch.map((_, i) => [i, i]),
  );
  await channel.close();
  await writer.close().catch(() => {});
  await reader.cancel().catch(() => {});
  await b.close();
});
