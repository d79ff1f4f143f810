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

Deno.test("jsonrpc: a 20k batch (maxBatchMessages raised) is answered whole, held calls in order", async () => {
  const count = 20_000;
  const [a, b] = memoryPair();
  // What the handlers saw, in the order they ran: calls and notifications are held in one queue.
  const ran: number[] = [];
  const channel = await openJsonRpc(a, {
    framing: "ndjson",
    maxInFlight: 16,
    maxBatchMessages: count,
    handlers: {
      echo: async (params: [number]) => {
        ran.push(params[0]);
        await null;
        return params[0];
      },
      note: (params: [number]) => void ran.push(params[0]),
    },
  });
  const writer = b.writable.getWriter();
  const reader = b.readable.pipeThrough(new NdjsonDecoderStream()).getReader();
  const batch = Array.from(
    { length: count },
    (_, i) =>
      i % 100 === 99
        ? { jsonrpc: "2.0", method: "note", params: [i] }
        : { jsonrpc: "2.0", id: i, method: "echo", params: [i] },
  );
  await writer.write(new TextEncoder().encode(`${JSON.stringify(batch)}\n`));
  const { value } = await reader.read();
  const answers = JSON.parse(new TextDecoder().decode(value)) as { id: number; result: number }[];
  const requests = batch.filter((message) => "id" in message) as { id: number }[];
  assert.equal(answers.length, requests.length);
  assert.deepEqual(
    answers.map(({ id, result }) => [id, result]).sort((x, y) => x[0] - y[0]),
    requests.map(({ id }) => [id, id]),
  );
  assert.deepEqual(ran, batch.map((_, i) => i));
  await channel.close();
  await writer.close().catch(() => {});
  await reader.cancel().catch(() => {});
  await b.close();
});

Deno.test("jsonrpc: answers to unreadable or invalid messages hold reading as a call's do", async () => {
  // A peer that writes such messages and reads nothing: the errors this side makes up itself
  // count against maxInFlight, so reading stops and the queue of answers stays bounded.
  const garbage = [
    ["not JSON", "x\n"],
    ["an invalid request", `{"jsonrpc":"2.0","id":1,"method":5}\n`],
    ["no such method", `{"jsonrpc":"2.0","id":1,"method":"nope"}\n`],
    ["a batch over maxBatchMessages", `[${Array(1000).fill("1").join(",")}]\n`],
  ];
  for (const [what, line] of garbage) {
    const [a, b] = memoryPair({ highWaterMark: 64 * 1024 });
    const channel = await openJsonRpc(a, {
      framing: "ndjson",
      maxInFlight: 16,
      writeHighWaterMark: 64 * 1024,
      onProtocolError: () => {},
    });
    const writer = b.writable.getWriter();
    const chunk = new TextEncoder().encode(line.repeat(Math.ceil(16 * 1024 / line.length)));
    // Up to 1.6 MiB, while this side reads: a write that waits 100 ms means it stopped.
    for (let i = 0; i < 100; i++) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const wrote = await Promise.race([
        writer.write(chunk).then(() => true),
        new Promise<boolean>((resolve) => timer = setTimeout(resolve, 100, false)),
      ]);
      clearTimeout(timer);
      if (!wrote) break;
    }
    const queued = 64 * 1024 - channel.desiredSize;
    writer.releaseLock();
    await b.abort().catch(() => {});
    await channel.abort();
    assert.ok(queued < 1024 * 1024, `${what}: ${(queued / 1048576).toFixed(1)} MiB of answers`);
  }
});
