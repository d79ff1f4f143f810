// A hostile JSON-RPC 2.0 peer against openJsonRpc, over NDJSON and Content-Length: ids of every
// JSON type, duplicate ids, responses that cross a cancel or carry `"method": null`, batches,
// cancels for ids of no request, params of every type, `__proto__` keys, deep nesting, lying
// headers, and answers or trace lines that a long or deep value would blow up.

import assert from "node:assert/strict";
import { memoryPair } from "../transports/memory.ts";
import { JsonRpcTrace } from "../wires/jsonrpc/_trace.ts";
import { openJsonRpc } from "./mod.ts";
import { setup } from "./_test_raw_peer.ts";

const encoder = new TextEncoder();
const FRAMINGS = ["ndjson", "content-length"] as const;

/** `depth` arrays nested in one another, as JSON text. */
function nested(depth: number): string {
  return "[".repeat(depth) + "]".repeat(depth);
}

Deno.test("wire hostile: an error answer longer than maxFrameBytes is cut, and a peer with the same limit reads it", async () => {
  const maxFrameBytes = 4096;
  const [a, b] = memoryPair();
  const server = await openJsonRpc(a, {
    framing: "ndjson",
    maxFrameBytes,
    handlers: {
      boom: () => {
        throw Object.assign(new Error("x".repeat(5000)), { code: 7, data: "d".repeat(5000) });
      },
      ok: () => 1,
    },
  });
  const client = await openJsonRpc<{ boom(p: object): void; ok(p: object): number }>(b, {
    framing: "ndjson",
    maxFrameBytes,
  });
  // The answer was 10,000 bytes and more: the client ended the connection over it.
  const error = await client.remote.boom({}).then(() => assert.fail("resolved"), (e) => e);
  assert.equal(error.name, "RemoteError", String(error));
  assert.equal(error.code, 7);
  assert.match(
    error.message,
    /^x+… \(cut: the answer took \d+ bytes, over maxFrameBytes \(4096\)\)$/,
  );
  assert.equal(await client.remote.ok({}), 1);
  await Promise.all([client.close(), server.close()]);

  // A raw peer: what it sends within the limit is answered within it, with the code kept.
  for (const framing of FRAMINGS) {
    const { channel, peer, errors } = await setup({ framing, maxFrameBytes, role: "server" });
    const answer = async (message: string) => {
      await peer.send(message);
      const reply = await peer.next() as { id: unknown; error: { code: number } };
      assert.ok(JSON.stringify(reply).length <= maxFrameBytes, `${JSON.stringify(reply).length}`);
      return reply;
    };
    // -32601 quotes the method name.
    const unknown = await answer(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "m".repeat(4000) }),
    );
    assert.deepEqual([unknown.id, unknown.error.code], [1, -32601]);
    // -32600 quoted the peer's "jsonrpc" value, or its id, whole.
    const version = await answer(JSON.stringify({ jsonrpc: "j".repeat(4000), id: 2, method: "m" }));
    assert.deepEqual([version.id, version.error.code], [2, -32600]);
    const id = await answer(
      JSON.stringify({ jsonrpc: "2.0", id: { k: "i".repeat(4000) }, method: "m" }),
    );
    assert.deepEqual([id.id, id.error.code], [null, -32600]);
    // Reports quote a peer's value cut short too (a 60 MiB one went to console.warn whole).
    await peer.send(
      JSON.stringify({ jsonrpc: "2.0", id: null, error: { message: "e".repeat(4000) } }),
    );
    await peer.send({ jsonrpc: "2.0", id: 3, method: "m" });
    await peer.next();
    assert.equal(errors.length, 3);
    assert.match(errors[2].message, /^The peer could not read a message: \{"message":"e+…$/);
    for (const report of errors) assert.ok(report.message.length < 400, `${report.message.length}`);
    await channel.close();
    await peer.close();
  }
});

Deno.test("wire hostile: a response whose method is null answers this side's call, and is not answered", async () => {
  for (const framing of FRAMINGS) {
    // As a serializer that writes every member of one message type sends it.
    const { channel, peer, errors } = await setup<{ a(p: object): string; b(p: object): string }>({
      framing,
      handlers: { ping: () => "pong" },
    });
    const call = channel.remote.a({}, { timeout: 5_000 });
    const request = await peer.next() as { id: number };
    await peer.send({ jsonrpc: "2.0", id: request.id, method: null, result: "x" });
    // It was answered -32600 under the id (which the peer takes for the answer to its own
    // request of that id) and the call waited for its deadline.
    assert.equal(await call, "x");
    const failed = channel.remote.b({}, { timeout: 5_000 });
    const second = await peer.next() as { id: number };
    await peer.send({
      jsonrpc: "2.0",
      id: second.id,
      method: null,
      error: { code: 5, message: "no" },
    });
    await assert.rejects(failed, { name: "RemoteError", code: 5 });
    await peer.send({ jsonrpc: "2.0", id: "after", method: "ping" });
    assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: "after", result: "pong" });
    assert.deepEqual(errors, []);
    await channel.close();
    await peer.close();
  }
});

Deno.test("wire hostile: a traced connection survives an error code nested deeper than the stack", async () => {
  const lines: string[] = [];
  const { channel, peer, errors } = await setup({
    trace: (line) => lines.push(line),
    handlers: { ping: () => "pong" },
  });
  // `${code}` of arrays nested this deep overflowed the stack: the connection ended.
  await peer.send(`{"jsonrpc":"2.0","id":77,"error":{"code":${nested(100_000)},"message":"m"}}`);
  await peer.send(
    `{"jsonrpc":"2.0","id":"${"i".repeat(100_000)}","method":"${"m".repeat(100_000)}"}`,
  );
  await peer.next();
  await peer.send({ jsonrpc: "2.0", id: 2, method: "ping" });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 2, result: "pong" });
  assert.match(lines[0], /^jsonrpc ← ERROR 77 code \[\[\[/);
  for (const line of lines) assert.ok(line.length < 1000, `${line.length}`);
  assert.equal(errors.length, 1);
  await channel.close();
  await peer.close();
});

Deno.test("wire hostile: the trace forgets the start of requests never answered, oldest first", () => {
  const trace = new JsonRpcTrace(() => {}, () => "");
  // An MCP call cancelled is never answered: each one's start was kept for the connection's
  // life. Ids are long so that the kept keys show in the heap.
  const pad = "p".repeat(200);
  const before = Deno.memoryUsage().heapUsed;
  for (let id = 0; id < 200_000; id++) {
    trace.frame(true, encoder.encode(`{"jsonrpc":"2.0","method":"m","id":"${pad}${id}"}`), id);
  }
  const grown = Deno.memoryUsage().heapUsed - before;
  // Kept, the keys alone take several times this bound.
  assert.ok(grown < 30e6, `${grown} bytes`);
  const lines: string[] = [];
  const timed = new JsonRpcTrace((line) => lines.push(line), () => "");
  timed.frame(true, encoder.encode(`{"jsonrpc":"2.0","method":"m","id":1}`), 10);
  timed.frame(false, encoder.encode(`{"jsonrpc":"2.0","id":1,"result":null}`), 12.5);
  assert.match(lines[1], /RESULT 1 \(\+2\.5 ms\)/);
});

Deno.test("wire hostile: ids of every JSON type are answered as sent, or -32600 with id null", async () => {
  const { channel, peer } = await setup({ role: "server", handlers: { echo: () => "ok" } });
  const cases: [string, unknown][] = [
    ["1", 1],
    ["1.0", 1], // the same number as 1
    ["1e0", 1],
    ["-7", -7],
    ["1.5", 1.5],
    ['"1"', "1"], // a string: never the number 1
    ["9007199254740993", null], // rounded as parsed: answered under it, it would not match
    ["1e400", null],
    ["true", null],
    ["{}", null],
    ["[]", null],
    ["null", null], // a request with id null: JSON-RPC discourages it, -32600
  ];
  for (const [text, answeredId] of cases) {
    await peer.send(`{"jsonrpc":"2.0","id":${text},"method":"echo"}`);
    const reply = await peer.next() as { id: unknown; result?: string; error?: { code: number } };
    assert.deepEqual(reply.id, answeredId, text);
    if (answeredId === null) assert.equal(reply.error?.code, -32600, text);
    else assert.equal(reply.result, "ok", text);
  }
  await channel.close();
  await peer.close();
});

Deno.test('wire hostile: requests 1 and "1" are two requests; a second 1 in flight is refused under its id', async () => {
  const gates: PromiseWithResolvers<void>[] = [];
  const { channel, peer, errors } = await setup({
    handlers: {
      wait: async ([name]: [string]) => {
        const gate = Promise.withResolvers<void>();
        gates.push(gate);
        await gate.promise;
        return name;
      },
    },
  });
  await peer.send({ jsonrpc: "2.0", id: 1, method: "wait", params: ["number"] });
  await peer.send({ jsonrpc: "2.0", id: "1", method: "wait", params: ["string"] });
  // vscode-jsonrpc and the MCP SDK run both and answer both under the one id; the peer cannot
  // tell the answers apart either way. Refused, the first keeps its handler and its answer.
  await peer.send({ jsonrpc: "2.0", id: 1, method: "wait", params: ["again"] });
  const refused = await peer.next() as { id: unknown; error: { code: number } };
  assert.deepEqual([refused.id, refused.error.code], [1, -32600]);
  assert.equal(gates.length, 2);
  for (const gate of gates) gate.resolve();
  const answers = [await peer.next(), await peer.next()] as { id: unknown; result: unknown }[];
  assert.deepEqual(
    answers.map((answer) => [answer.id, answer.result]).sort(),
    [[1, "number"], ["1", "string"]],
  );
  assert.equal(errors.length, 1);
  await channel.close();
  await peer.close();
});

Deno.test("wire hostile: answers for ids of no call, calls not yet sent, or calls cancelled", async () => {
  for (const dialect of ["lsp", "mcp"] as const) {
    const { channel, peer, errors } = await setup<{ a(p: object): string }>({
      dialect,
      handlers: { ping: () => "pong" },
    });
    // A peer answering every id it can think of, before this side sent any call.
    for (const id of [1, 2, "1", null]) await peer.send({ jsonrpc: "2.0", id, result: "early" });
    const controller = new AbortController();
    const call = channel.remote.a({}, { signal: controller.signal });
    const request = await peer.next() as { id: number };
    assert.equal(request.id, 1);
    controller.abort(new Error("stop"));
    await assert.rejects(call, { message: "stop" });
    const cancel = await peer.next() as { method: string };
    assert.equal(cancel.method, dialect === "lsp" ? "$/cancelRequest" : "notifications/cancelled");
    // The answer that crossed the cancel settles nothing, and ends nothing.
    await peer.send({ jsonrpc: "2.0", id: request.id, result: "late", error: { code: 1 } });
    await peer.send({ jsonrpc: "2.0", id: 7, method: "ping" });
    assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 7, result: "pong" });
    assert.equal(errors.length, 4, dialect);
    await channel.close();
    await peer.close();
  }
});

Deno.test("wire hostile: batches: empty, notifications only, nested, mixed with responses", async () => {
  for (const framing of FRAMINGS) {
    const heard: unknown[] = [];
    const { channel, peer } = await setup<{ a(p: object): string }>({
      framing,
      role: "server",
      handlers: { ping: () => "pong", note: (p: unknown) => void heard.push(p) },
    });
    await peer.send([]);
    assert.deepEqual(await peer.next(), {
      jsonrpc: "2.0",
      id: null,
      error: { code: -32600, message: "Invalid Request: an empty batch" },
    });
    // Notifications only: no answer at all, not even an empty array.
    await peer.send([{ jsonrpc: "2.0", method: "note", params: [1] }, {
      jsonrpc: "2.0",
      method: "note",
      params: [2],
    }]);
    await peer.send([[], 1]);
    const invalid = await peer.next() as { id: null; error: { code: number } }[];
    assert.deepEqual(invalid.map((reply) => [reply.id, reply.error.code]), [[null, -32600], [
      null,
      -32600,
    ]]);
    assert.deepEqual(heard, [[1], [2]]);
    // A response in a batch settles this side's call; the requests beside it are answered.
    const call = channel.remote.a({});
    const request = await peer.next() as { id: number };
    await peer.send([
      { jsonrpc: "2.0", id: request.id, result: "r" },
      { jsonrpc: "2.0", id: 9, method: "ping" },
      { jsonrpc: "2.0", method: "note", params: [3] },
    ]);
    assert.equal(await call, "r");
    assert.deepEqual(await peer.next(), [{ jsonrpc: "2.0", id: 9, result: "pong" }]);
    await channel.close();
    await peer.close();
  }
});

Deno.test("wire hostile: a batch of 100,000 requests is refused whole by default, answered in order when allowed", async () => {
  const batch = Array.from({ length: 100_000 }, (_, id) => ({
    jsonrpc: "2.0",
    id,
    method: "n",
    params: [id],
  }));
  const refusing = await setup({ role: "server", handlers: { n: ([i]: [number]) => i } });
  await refusing.peer.send(batch);
  const refusal = await refusing.peer.next() as { id: null; error: { message: string } };
  assert.equal(refusal.id, null);
  assert.match(refusal.error.message, /100000 messages exceeds maxBatchMessages \(1000\)/);
  await refusing.channel.close();
  await refusing.peer.close();

  const { channel, peer } = await setup({
    maxBatchMessages: 100_000,
    maxInFlight: 64,
    handlers: { n: ([i]: [number]) => i },
  });
  await peer.send(batch);
  const answers = await peer.next() as { id: number; result: number }[];
  assert.equal(answers.length, 100_000);
  assert.ok(answers.every((answer, i) => answer.id === i && answer.result === i));
  await channel.close();
  await peer.close();
});

Deno.test("wire hostile: cancels naming no request of the peer's cancel nothing", async () => {
  for (const dialect of ["lsp", "mcp"] as const) {
    const started = Promise.withResolvers<void>();
    const release = Promise.withResolvers<string>();
    let aborted = false;
    const { channel, peer } = await setup<{ mine(p: object): string }>({
      dialect,
      handlers: {
        wait: (_: object, ctx: { signal: AbortSignal }) => {
          ctx.signal.addEventListener("abort", () => aborted = true);
          started.resolve();
          return release.promise;
        },
      },
    });
    const cancel = (id: unknown) =>
      peer.send(
        dialect === "lsp"
          ? { jsonrpc: "2.0", method: "$/cancelRequest", params: { id } }
          : { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id } },
      );
    await peer.send({ jsonrpc: "2.0", id: 5, method: "wait", params: {} });
    await started.promise;
    // This side's own call 1 is in flight: a cancel is about the peer's requests only.
    const mine = channel.remote.mine({});
    const request = await peer.next() as { id: number };
    for (const id of [request.id, "5", 6, null, { id: 5 }]) await cancel(id);
    await peer.send({ jsonrpc: "2.0", id: request.id, result: "mine" });
    assert.equal(await mine, "mine");
    assert.equal(aborted, false, dialect);
    release.resolve("done");
    assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 5, result: "done" });
    await channel.close();
    await peer.close();
  }
});

Deno.test("wire hostile: params that are no object or array are -32600; __proto__ keys stay data", async () => {
  const seen: unknown[] = [];
  const { channel, peer } = await setup({
    handlers: { echo: (params: unknown) => (seen.push(params), "ok") },
  });
  for (const params of ["5", '"x"', "true", "null"]) {
    await peer.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":${params}}`);
    const reply = await peer.next() as { id: number; error: { code: number } };
    assert.deepEqual([reply.id, reply.error.code], [1, -32600], params);
  }
  await peer.send(
    '{"jsonrpc":"2.0","id":2,"method":"echo","params":{"__proto__":{"polluted":1},"a":1,"a":2}}',
  );
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 2, result: "ok" });
  const params = seen[0] as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(params), Object.prototype);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.deepEqual(Object.keys(params), ["__proto__", "a"]);
  assert.equal(params.a, 2); // the last of duplicate keys, as JSON.parse takes it
  // rpc.* is reserved by JSON-RPC: no handler serves it, so it is -32601 like any unknown.
  await peer.send({ jsonrpc: "2.0", id: 3, method: "rpc.discover" });
  assert.equal((await peer.next() as { error: { code: number } }).error.code, -32601);
  await channel.close();
  await peer.close();
});

Deno.test("wire hostile: JSON nested a million deep reaches the handler and is answered", async () => {
  const { channel, peer } = await setup({
    framing: "content-length",
    handlers: { depth: (params: unknown[]) => Array.isArray(params[0]), echo: (p: unknown) => p },
  });
  await peer.send(`{"jsonrpc":"2.0","id":1,"method":"depth","params":${nested(1_000_000)}}`);
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 1, result: true });
  // Sent back, it is an error of this side's JSON codec, not a stack overflow.
  await peer.send(`{"jsonrpc":"2.0","id":2,"method":"echo","params":${nested(100_000)}}`);
  const echo = await peer.next() as { id: number; error: { code: number } };
  assert.deepEqual([echo.id, echo.error.code], [2, -32603]);
  await channel.close();
  await peer.close();
});

Deno.test("wire hostile: a Content-Length that lies, or headers that are no headers, end the connection with a framing error", async () => {
  const cases: [string, RegExp][] = [
    // Shorter than the body: the rest is read as the next header section.
    ["Content-Length: 2\r\n\r\n{}}\r\n\r\n", /Malformed header line "}"/],
    // Injected through a bare \r, a second length, or a header ending in a bare \n.
    ["Content-Length: 2\rX: 5\r\n\r\n{}", /Invalid Content-Length/],
    ["Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", /given twice/],
    ["Content-Length: 2\n\n{}", /bare "\\n"/],
    // Never ending its header section.
    [`X-Junk: ${"j".repeat(9000)}`, /exceeds maxHeaderBytes/],
  ];
  for (const [input, cause] of cases) {
    const { channel, peer } = await setup<{ a(p: object): void }>({ framing: "content-length" });
    const call = channel.remote.a({});
    await peer.next();
    await peer.raw(input);
    const error = await call.then(() => assert.fail("resolved"), (e) => e);
    assert.equal(error.name, "ConnectionClosedError", input);
    assert.match(String(error.cause?.message), cause, input);
    await channel.close();
    await peer.close();
  }
  // Longer than the body: the next message is taken into it, and the whole is no JSON.
  const { channel, peer, errors } = await setup({ framing: "content-length", role: "server" });
  const next = '{"jsonrpc":"2.0","id":2,"method":"x"}';
  const rest = `{}Content-Length: ${next.length}\r\n\r\n${next}`;
  await peer.raw(`Content-Length: ${rest.length}\r\n\r\n${rest}`);
  assert.equal((await peer.next() as { error: { code: number } }).error.code, -32700);
  assert.equal(errors.length, 1);
  await channel.close();
  await peer.close();
});

Deno.test("wire hostile: an LSP server that never answers cancelled requests holds no call slot", async () => {
  const { channel, peer, errors } = await setup<{ a(p: object): string }>({
    framing: "content-length",
    maxInFlight: 2,
  });
  // LSP says a cancelled request is still answered; this server never answers one.
  for (let i = 0; i < 2; i++) {
    await assert.rejects(channel.remote.a({}, { timeout: 20 }), { name: "DeadlineExceededError" });
    assert.equal((await peer.next() as { method: string }).method, "a");
    assert.equal((await peer.next() as { method: string }).method, "$/cancelRequest");
  }
  // Each kept a slot until its answer: the third call waited for one until its own deadline,
  // without reaching the server.
  const third = channel.remote.a({}, { timeout: 2_000 });
  const request = await peer.next() as { id: number; method: string };
  assert.deepEqual([request.id, request.method], [3, "a"]);
  // The answers that come late after all are dropped without a word, as MCP's are.
  for (const id of [1, 2]) {
    await peer.send({ jsonrpc: "2.0", id, error: { code: -32800, message: "cancelled" } });
  }
  await peer.send({ jsonrpc: "2.0", id: 3, result: "third" });
  assert.equal(await third, "third");
  assert.deepEqual(errors, []);
  await channel.close();
  await peer.close();
});

Deno.test("wire hostile: LSP parts that cross a cancel go to no later call with the same token", async () => {
  const { channel, peer, errors } = await setup<{
    refs(p: { partialResultToken: string }): AsyncIterable<number[]>;
  }>({ framing: "content-length" });
  const first = channel.remote.refs({ partialResultToken: "t" });
  const firstRequest = await peer.next() as { id: number };
  await first.cancel();
  assert.equal((await peer.next() as { method: string }).method, "$/cancelRequest");
  // Until the first call's answer, its token is still its own.
  await assert.rejects(
    Array.fromAsync(channel.remote.refs({ partialResultToken: "t" })),
    TypeError,
  );
  await peer.send({ jsonrpc: "2.0", method: "$/progress", params: { token: "t", value: [1] } });
  await peer.send({ jsonrpc: "2.0", id: firstRequest.id, error: { code: -32800, message: "c" } });
  const second = channel.remote.refs({ partialResultToken: "t" });
  const secondRequest = await peer.next() as { id: number };
  await peer.send({ jsonrpc: "2.0", method: "$/progress", params: { token: "t", value: [2] } });
  await peer.send({ jsonrpc: "2.0", id: secondRequest.id, result: [] });
  assert.deepEqual(await Array.fromAsync(second), [[2], []]);
  assert.deepEqual(errors, []);
  await channel.close();
  await peer.close();
});

Deno.test("wire hostile: a handler's error whose data JSON cannot hold is still answered, alone or in a batch", async () => {
  const { channel, peer } = await setup({
    handlers: {
      boom: () => {
        throw Object.assign(new Error("boom"), { code: 1, data: 1n });
      },
      ping: () => "pong",
    },
  });
  await peer.send({ jsonrpc: "2.0", id: 1, method: "boom" });
  const alone = await peer.next() as { id: number; error: { code: number } };
  assert.deepEqual([alone.id, alone.error.code], [1, -32603]);
  await peer.send([{ jsonrpc: "2.0", id: 2, method: "boom" }, {
    jsonrpc: "2.0",
    id: 3,
    method: "ping",
  }]);
  const batch = await peer.next() as { id: number; error?: { code: number } }[];
  assert.deepEqual(batch.map((answer) => [answer.id, answer.error?.code]), [[2, -32603], [
    3,
    undefined,
  ]]);
  await channel.close();
  await peer.close();
});
