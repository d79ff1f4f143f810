// A JSON-RPC peer knows nothing of maxInFlight: requests past it are held rather than refused,
// a batch included, and every one is answered. Reading goes on a little past them, so that
// what a running handler waits for, or a cancel of a held request, is not stuck behind them.

import assert from "node:assert/strict";
import { NdjsonDecoderStream } from "../framing/mod.ts";
import { memoryPair } from "../transports/memory.ts";
import { openJsonRpc } from "./mod.ts";
import { RawPeer, setup } from "./_test_raw_peer.ts";

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

Deno.test("jsonrpc: a handler's call back to its peer is answered while a request is held", async () => {
  // An LSP server's handler asks the client (workspace/configuration) while the client's next
  // request is held: the answer comes after that request, and reading had stopped before it,
  // so the handler waited for its own deadline.
  const [a, b] = memoryPair();
  const server: Awaited<ReturnType<typeof openJsonRpc<{ config(p: []): number }>>> =
    await openJsonRpc<{ config(p: []): number }>(a, {
      framing: "ndjson",
      maxInFlight: 1,
      handlers: { work: async ([n]: [number]) => await server.remote.config([]) + n },
    });
  const client = await openJsonRpc<{ work(p: [number]): number }>(b, {
    framing: "ndjson",
    handlers: { config: () => 10 },
  });
  const calls = [1, 2, 3].map((n) => client.remote.work([n], { timeout: 5_000 }));
  assert.deepEqual(await Promise.all(calls), [11, 12, 13]);
  await client.close();
  await server.close();
});

for (const dialect of ["lsp", "mcp"] as const) {
  Deno.test(`jsonrpc: a cancel of a held request (${dialect}) ends it unrun, while it is held`, async () => {
    const release = Promise.withResolvers<void>();
    const ran: number[] = [];
    const { channel, peer } = await setup({
      dialect,
      maxInFlight: 1,
      handlers: {
        block: async () => {
          await release.promise;
          return "released";
        },
        work: ([n]: [number]) => {
          ran.push(n);
          return n;
        },
      },
    });
    await peer.send({ jsonrpc: "2.0", id: 1, method: "block" });
    await peer.send({ jsonrpc: "2.0", id: 2, method: "work", params: [2] });
    await peer.send(
      dialect === "lsp"
        ? { jsonrpc: "2.0", method: "$/cancelRequest", params: { id: 2 } }
        : { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2 } },
    );
    await peer.send({ jsonrpc: "2.0", id: 3, method: "work", params: [3] });
    if (dialect === "lsp") {
      // Answered at once as LSP asks (RequestCancelled), while "block" still runs.
      assert.deepEqual(await peer.next(), {
        jsonrpc: "2.0",
        id: 2,
        error: {
          code: -32800,
          message: 'The caller cancelled "work"',
          data: { name: "CallCancelledError", code: "cancelled" },
        },
      });
    }
    // MCP answers no cancelled request: the next answers are 1's and 3's.
    release.resolve();
    assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 1, result: "released" });
    assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 3, result: 3 });
    assert.deepEqual(ran, [3]);
    await channel.close();
    await peer.close();
  });
}

Deno.test("jsonrpc: request and cancel pairs past a held request queue no answers without bound", async () => {
  // LSP answers a cancelled request (-32800). A peer that never reads sends one request that
  // blocks (maxInFlight 1), then, in chunks that each end in a cancel, requests that are held
  // and cancelled at once: each chunk's held requests are all cancelled, so the loop serving
  // held calls ends after each chunk, resetting `since`, and the 1 MiB read-ahead never ends.
  const [a, b] = memoryPair({ highWaterMark: 64 * 1024 });
  const channel = await openJsonRpc(a, {
    framing: "ndjson",
    dialect: "lsp",
    maxInFlight: 1,
    writeHighWaterMark: 64 * 1024,
    onProtocolError: () => {},
    handlers: { block: () => new Promise(() => {}), work: () => 1 },
  });
  const writer = b.writable.getWriter();
  const enc = new TextEncoder();
  await writer.write(enc.encode(`{"jsonrpc":"2.0","id":0,"method":"block"}\n`));
  let id = 1;
  const chunk = () => {
    let text = "";
    while (text.length < 16 * 1024) {
      text += `{"jsonrpc":"2.0","id":${id},"method":"work"}\n` +
        `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":${id}}}\n`;
      id++;
    }
    return enc.encode(text);
  };
  // Up to 8 MiB, while this side reads: a write that waits 100 ms means it stopped reading.
  let written = 0;
  for (let i = 0; i < 512; i++) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const wrote = await Promise.race([
      writer.write(chunk()).then(() => true),
      new Promise<boolean>((resolve) => timer = setTimeout(resolve, 100, false)),
    ]);
    clearTimeout(timer);
    if (!wrote) break;
    written += 16 * 1024;
  }
  const queued = 64 * 1024 - channel.desiredSize;
  writer.releaseLock();
  await b.abort().catch(() => {});
  await channel.abort();
  assert.ok(
    queued < 2 * 1024 * 1024,
    `${(written / 1048576).toFixed(1)} MiB read, ${
      (queued / 1048576).toFixed(1)
    } MiB of answers queued for a peer that reads nothing`,
  );
});

for (const dialect of ["lsp", "mcp"] as const) {
  Deno.test(`jsonrpc: a cancel of the running request is read past a cancelled held one (${dialect})`, async () => {
    const { channel, peer } = await setup({
      dialect,
      maxInFlight: 1,
      handlers: {
        // Runs until it is cancelled.
        wait: (_: unknown, ctx: { signal: AbortSignal }) =>
          new Promise((_, reject) =>
            ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason))
          ),
        work: ([n]: [number]) => n,
      },
    });
    const cancel = (id: number) =>
      dialect === "lsp"
        ? { jsonrpc: "2.0", method: "$/cancelRequest", params: { id } }
        : { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id } };
    await peer.send({ jsonrpc: "2.0", id: 1, method: "wait" });
    await peer.send({ jsonrpc: "2.0", id: 2, method: "work", params: [2] });
    await peer.send({ jsonrpc: "2.0", id: 3, method: "work", params: [3] });
    await peer.send(cancel(2)); // the older held request is out of date
    await peer.send(cancel(1)); // and so is the running one
    const answers: unknown[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const collected = (async () => {
      // LSP: 2's and 1's cancel answers, then 3's; MCP answers no cancelled request: 3's.
      for (let i = 0; i < (dialect === "lsp" ? 3 : 1); i++) answers.push(await peer.next());
      return true;
    })();
    const done = await Promise.race([
      collected,
      new Promise<boolean>((resolve) => timer = setTimeout(resolve, 3_000, false)),
    ]);
    clearTimeout(timer);
    await channel.abort();
    await peer.close();
    await collected.catch(() => {});
    assert.ok(
      done,
      `the cancel of the running request was never read: answers ${JSON.stringify(answers)}`,
    );
    assert.deepEqual(answers.at(-1), { jsonrpc: "2.0", id: 3, result: 3 });
  });
}

Deno.test("jsonrpc: a handler's call back is answered past a cancelled held request", async () => {
  // held_calls_test.ts's workspace/configuration case, with one held request cancelled.
  const [a, b] = memoryPair();
  const server: Awaited<ReturnType<typeof openJsonRpc<{ config(p: []): number }>>> =
    await openJsonRpc<{ config(p: []): number }>(a, {
      framing: "ndjson",
      dialect: "lsp",
      maxInFlight: 1,
      handlers: {
        work: async ([n]: [number]) => await server.remote.config([], { timeout: 2_000 }) + n,
      },
    });
  const peer = new RawPeer(b, "ndjson");
  await peer.send({ jsonrpc: "2.0", id: 1, method: "work", params: [1] });
  await peer.send({ jsonrpc: "2.0", id: 2, method: "work", params: [2] });
  await peer.send({ jsonrpc: "2.0", id: 3, method: "work", params: [3] });
  await peer.send({ jsonrpc: "2.0", method: "$/cancelRequest", params: { id: 2 } });
  // The server asks for its configuration (request id 0 of the server's side).
  const seen: Array<{ id?: number; method?: string; result?: unknown; error?: unknown }> = [];
  for (;;) {
    const message = await peer.next() as { id?: number; method?: string };
    seen.push(message);
    if (message.method === "config") {
      await peer.send({ jsonrpc: "2.0", id: message.id, result: 10 });
    } else if (message.id === 1) break;
  }
  const one = seen.at(-1)!;
  await server.abort();
  await peer.close();
  assert.deepEqual(one.result, 11, `request 1 failed: ${JSON.stringify(one)}`);
});

Deno.test("jsonrpc: requests still held when close() starts are answered as refused", async () => {
  // As requests that come while closing are: none is left without an answer.
  const release = Promise.withResolvers<void>();
  const { channel, peer } = await setup({
    dialect: "lsp",
    maxInFlight: 1,
    handlers: {
      block: async () => {
        await release.promise;
        return "released";
      },
      work: ([n]: [number]) => n,
    },
  });
  await peer.send({ jsonrpc: "2.0", id: 1, method: "block" });
  await peer.send({ jsonrpc: "2.0", id: 2, method: "work", params: [2] });
  await peer.send({ jsonrpc: "2.0", id: 3, method: "work", params: [3] });
  await new Promise((resolve) => setTimeout(resolve, 50));
  const closing = channel.close();
  const refused = (id: number) => ({
    jsonrpc: "2.0",
    id,
    error: {
      code: -32603,
      message: "The connection is closing",
      data: { name: "ConnectionClosedError", code: "closing" },
    },
  });
  assert.deepEqual(await peer.next(), refused(2));
  assert.deepEqual(await peer.next(), refused(3));
  release.resolve();
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 1, result: "released" });
  await closing;
  await peer.close();
});
