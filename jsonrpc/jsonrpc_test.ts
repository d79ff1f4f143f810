// openJsonRpc against a raw peer that writes and reads JSON-RPC bytes: the wire format, ids,
// batches, errors, cancellation, progress, and hostile input.

import assert from "node:assert/strict";
import type { CallContext } from "../channel/mod.ts";
import { memoryPair } from "../transports/memory.ts";
import { DEFAULT_MAX_BATCH_MESSAGES, openJsonRpc } from "./mod.ts";
import { setup } from "./_test_raw_peer.ts";

Deno.test("jsonrpc: requests by name and by position, string and number ids, notifications", async () => {
  const notes: unknown[] = [];
  const { channel, peer } = await setup({
    handlers: {
      sum: (params: number[]) => params.reduce((a, b) => a + b, 0),
      hello: ({ name }: { name: string }) => `hi ${name}`,
      nothing: () => undefined,
      note: (params: unknown) => void notes.push(params),
    },
  });
  await peer.send({ jsonrpc: "2.0", id: 1, method: "sum", params: [1, 2, 3] });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 1, result: 6 });
  await peer.send({ jsonrpc: "2.0", id: "abc", method: "hello", params: { name: "x" } });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: "abc", result: "hi x" });
  // The number 1 and the string "1" are different ids.
  await peer.send({ jsonrpc: "2.0", id: "1", method: "nothing" });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: "1", result: null });
  await peer.send({ jsonrpc: "2.0", method: "note", params: { n: 1 } });
  await peer.send({ jsonrpc: "2.0", id: 2, method: "sum", params: [] });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 2, result: 0 });
  assert.deepEqual(notes, [{ n: 1 }]);
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc: outgoing requests, results and errors as RemoteError with code and data", async () => {
  interface Peer {
    add(params: [number, number]): number;
    fail(params: object): never;
  }
  const { channel, peer } = await setup<Peer>();
  const sum = channel.remote.add([2, 3]);
  const request = await peer.next() as { id: number; method: string; params: unknown };
  assert.deepEqual(request, { jsonrpc: "2.0", method: "add", id: request.id, params: [2, 3] });
  assert.equal(typeof request.id, "number");
  await peer.send({ jsonrpc: "2.0", id: request.id, result: 5 });
  assert.equal(await sum, 5);

  const failing = channel.remote.fail({});
  const second = await peer.next() as { id: number };
  await peer.send({
    jsonrpc: "2.0",
    id: second.id,
    error: { code: -32001, message: "no can do", data: { why: "x" } },
  });
  await assert.rejects(failing, (error: Error & { code?: unknown; data?: unknown }) => {
    assert.equal(error.name, "RemoteError");
    assert.equal(error.message, "no can do");
    assert.equal(error.code, -32001);
    assert.deepEqual(error.data, { why: "x" });
    return true;
  });
  // Params must be an object or an array.
  await assert.rejects(channel.remote.add(7 as unknown as [number, number]), TypeError);
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc: handler errors, unknown methods, parse errors and invalid requests", async () => {
  const { channel, peer, errors } = await setup({
    handlers: {
      coded() {
        throw Object.assign(new Error("bad input"), { code: -32602, data: [1] });
      },
      plain() {
        throw new TypeError("oops");
      },
      ok: () => "fine",
    },
  });
  await peer.send({ jsonrpc: "2.0", id: 1, method: "coded" });
  assert.deepEqual(await peer.next(), {
    jsonrpc: "2.0",
    id: 1,
    error: { code: -32602, message: "bad input", data: [1] },
  });
  await peer.send({ jsonrpc: "2.0", id: 2, method: "plain" });
  const plain = await peer.next() as { error: { code: number; message: string } };
  assert.equal(plain.error.code, -32603);
  assert.equal(plain.error.message, "oops");
  await peer.send({ jsonrpc: "2.0", id: 3, method: "missing" });
  const missing = await peer.next() as { id: number; error: { code: number } };
  assert.equal(missing.id, 3);
  assert.equal(missing.error.code, -32601);
  // Garbage: -32700 with id null, and the connection goes on.
  await peer.send("{this is not json");
  assert.deepEqual(await peer.next(), {
    jsonrpc: "2.0",
    id: null,
    error: { code: -32700, message: "Parse error" },
  });
  // Invalid requests: -32600.
  await peer.send({ jsonrpc: "1.0", id: 4, method: "ok" });
  assert.equal((await peer.next() as { error: { code: number } }).error.code, -32600);
  await peer.send({ jsonrpc: "2.0", id: 5, method: 42 });
  assert.deepEqual((await peer.next() as { id: unknown }).id, 5);
  await peer.send({ jsonrpc: "2.0", id: 6, method: "ok", params: "scalar" });
  assert.equal((await peer.next() as { error: { code: number } }).error.code, -32600);
  await peer.send(42);
  assert.equal((await peer.next() as { error: { code: number } }).error.code, -32600);
  await peer.send([]);
  assert.equal((await peer.next() as { error: { code: number } }).error.code, -32600);
  await peer.send({ jsonrpc: "2.0", id: 7, method: "ok" });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 7, result: "fine" });
  assert.equal(errors.length, 6);
  assert.ok(errors.every((error) => error.name === "ProtocolError"));
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc: a batch is answered as one array once every request in it is", async () => {
  const { channel, peer } = await setup({
    handlers: {
      slow: async (params: [number]) => {
        await new Promise((resolve) => setTimeout(resolve, params[0]));
        return params[0];
      },
      note: () => {},
    },
  });
  await peer.send([
    { jsonrpc: "2.0", id: 1, method: "slow", params: [30] },
    { jsonrpc: "2.0", method: "note" },
    { jsonrpc: "2.0", id: "b", method: "slow", params: [1] },
    { jsonrpc: "2.0", id: 3, method: "missing" },
    { foo: "bar" },
  ]);
  const answers = await peer.next() as { id: unknown; error?: { code: number } }[];
  assert.ok(Array.isArray(answers));
  const byId = new Map(answers.map((answer) => [answer.id, answer]));
  assert.equal(answers.length, 4);
  assert.deepEqual(byId.get(1), { jsonrpc: "2.0", id: 1, result: 30 });
  assert.deepEqual(byId.get("b"), { jsonrpc: "2.0", id: "b", result: 1 });
  assert.equal(byId.get(3)?.error?.code, -32601);
  assert.equal(byId.get(null)?.error?.code, -32600);
  // A batch of notifications only is answered with nothing: the next answer is the next call's.
  await peer.send([{ jsonrpc: "2.0", method: "note" }]);
  await peer.send({ jsonrpc: "2.0", id: 9, method: "slow", params: [0] });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 9, result: 0 });
  await channel.close();
  await peer.close();
});

/** A batch of `count` "echo" requests, ids from 0, with a notification after every tenth. */
function echoBatch(count: number): unknown[] {
  const batch: unknown[] = [];
  for (let id = 0; id < count; id++) {
    batch.push(
      id % 10 === 9
        ? { jsonrpc: "2.0", method: "note", params: [id] }
        : { jsonrpc: "2.0", id, method: "echo", params: [id] },
    );
  }
  return batch;
}

Deno.test("jsonrpc: a batch over maxBatchMessages is refused whole with one -32600, none of it run", async () => {
  let ran = 0;
  const { channel, peer, errors } = await setup({
    handlers: { echo: (params: [number]) => (ran++, params[0]), note: () => void ran++ },
  });
  const refused = async (batch: unknown[], limit: number) => {
    await peer.send(batch);
    const answer = await peer.next() as { id: unknown; error: { code: number; message: string } };
    assert.equal(answer.id, null);
    assert.equal(answer.error.code, -32600);
    assert.equal(
      answer.error.message,
      `Invalid Request: a batch of ${batch.length} messages exceeds maxBatchMessages (${limit})`,
    );
  };
  await refused(echoBatch(DEFAULT_MAX_BATCH_MESSAGES + 1), DEFAULT_MAX_BATCH_MESSAGES);
  // Notifications alone, which a batch within the limit would not answer, are refused too.
  await refused(
    Array.from({ length: 5000 }, () => ({ jsonrpc: "2.0", method: "note" })),
    DEFAULT_MAX_BATCH_MESSAGES,
  );
  assert.equal(ran, 0);
  assert.equal(errors.length, 2);
  assert.match(errors[0].message, /maxBatchMessages \(1000\)/);
  // The connection goes on.
  await peer.send({ jsonrpc: "2.0", id: "after", method: "echo", params: [1] });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: "after", result: 1 });
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc: a batch of exactly maxBatchMessages is answered whole", async () => {
  const notes: number[] = [];
  const { channel, peer } = await setup({
    handlers: {
      echo: (params: [number]) => params[0],
      note: (params: [number]) => void notes.push(params[0]),
    },
  });
  const batch = echoBatch(DEFAULT_MAX_BATCH_MESSAGES);
  await peer.send(batch);
  const answers = await peer.next() as { id: number; result: number }[];
  const requests = batch.filter((m) => "id" in (m as object)) as { id: number }[];
  assert.equal(answers.length, requests.length);
  assert.deepEqual(
    answers.map(({ id, result }) => [id, result]).sort((x, y) => x[0] - y[0]),
    requests.map(({ id }) => [id, id]),
  );
  assert.equal(notes.length, batch.length - requests.length);
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc: a batch's answers past maxFrameBytes in all become short errors", async () => {
  const maxFrameBytes = 1024;
  const { channel, peer } = await setup({
    maxFrameBytes,
    handlers: { big: () => "x".repeat(420) },
  });
  await peer.send([1, 2, 3].map((id) => ({ jsonrpc: "2.0", id, method: "big" })));
  const answers = await peer.next() as {
    id: number;
    result?: string;
    error?: { code: number; message: string };
  }[];
  // The answers kept fit maxFrameBytes; the one that would not is a short error instead.
  assert.ok(JSON.stringify(answers.slice(0, 2)).length <= maxFrameBytes);
  assert.deepEqual(answers.map((answer) => answer.id), [1, 2, 3]);
  assert.equal(answers[0].result, "x".repeat(420));
  assert.equal(answers[1].result, "x".repeat(420));
  assert.equal(answers[2].error?.code, -32603);
  assert.match(
    answers[2].error?.message ?? "",
    /would take the batch's answer past maxFrameBytes \(1024\)/,
  );
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc: maxBatchMessages is an option: raised, lowered, 0 refuses every batch", async () => {
  for (const limit of [0, 3]) {
    const { channel, peer } = await setup({
      maxBatchMessages: limit,
      handlers: { echo: (params: [number]) => params[0] },
    });
    const over = echoBatch(limit + 1);
    await peer.send(over);
    const answer = await peer.next() as { error: { code: number; message: string } };
    assert.equal(answer.error.code, -32600);
    assert.match(
      answer.error.message,
      new RegExp(`a batch of ${limit + 1} messages? exceeds maxBatchMessages \\(${limit}\\)`),
    );
    if (limit > 0) {
      await peer.send(echoBatch(limit));
      assert.equal((await peer.next() as unknown[]).length, limit);
    }
    await channel.close();
    await peer.close();
  }
  for (const bad of [-1, 1.5, NaN]) {
    // openJsonRpc rejects (it is async): nothing was opened on the transport.
    const [end] = memoryPair();
    await assert.rejects(
      openJsonRpc(end, { framing: "ndjson", maxBatchMessages: bad }),
      {
        name: "RangeError",
        message:
          `maxBatchMessages must be an integer from 0 to ${Number.MAX_SAFE_INTEGER}, got ${bad}`,
      },
    );
    await end.close();
  }
});

Deno.test("jsonrpc: cancellation both ways, LSP and MCP", async () => {
  for (const dialect of ["lsp", "mcp"] as const) {
    const stopped = Promise.withResolvers<unknown>();
    const { channel, peer } = await setup<{ work(p: object): string }>({
      dialect,
      handlers: {
        wait: (_: object, ctx: CallContext) =>
          new Promise((_, reject) =>
            ctx.signal.addEventListener("abort", () => {
              stopped.resolve(ctx.signal.reason);
              reject(ctx.signal.reason);
            })
          ),
      },
    });
    // Outgoing: abort sends the dialect's cancel notification and rejects locally.
    const controller = new AbortController();
    const work = channel.remote.work({}, { signal: controller.signal });
    const request = await peer.next() as { id: number };
    controller.abort(new Error("stop"));
    await assert.rejects(work, { message: "stop" });
    const cancel = await peer.next();
    if (dialect === "lsp") {
      assert.deepEqual(cancel, {
        jsonrpc: "2.0",
        method: "$/cancelRequest",
        params: { id: request.id },
      });
      // LSP answers a cancelled request; the answer is taken quietly.
      await peer.send({
        jsonrpc: "2.0",
        id: request.id,
        error: { code: -32800, message: "cancelled" },
      });
    } else {
      assert.deepEqual(cancel, {
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: request.id, reason: "stop" },
      });
    }
    // Incoming: the peer's cancel fires the handler's signal.
    await peer.send({ jsonrpc: "2.0", id: "w", method: "wait" });
    await new Promise((resolve) => setTimeout(resolve, 10));
    await peer.send(
      dialect === "lsp"
        ? { jsonrpc: "2.0", method: "$/cancelRequest", params: { id: "w" } }
        : { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "w" } },
    );
    assert.equal((await stopped.promise as Error).name, "CallCancelledError");
    if (dialect === "lsp") {
      const answer = await peer.next() as { id: string; error: { code: number } };
      assert.equal(answer.id, "w");
      assert.equal(answer.error.code, -32800);
    }
    await channel.close();
    await peer.close();
  }
});

Deno.test("jsonrpc: deadlines cancel like a signal", async () => {
  const { channel, peer } = await setup<{ slow(p: object): string }>({ dialect: "mcp" });
  const call = channel.remote.slow({}, { timeout: 20 });
  const request = await peer.next() as { id: number };
  await assert.rejects(call, { name: "DeadlineExceededError" });
  const cancel = await peer.next() as { method: string; params: { requestId: number } };
  assert.equal(cancel.method, "notifications/cancelled");
  assert.equal(cancel.params.requestId, request.id);
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc: progress notifications reach the call's onProgress (LSP and MCP)", async () => {
  for (const dialect of ["lsp", "mcp"] as const) {
    const { channel, peer } = await setup<{ run(p: { x: number }): string }>({ dialect });
    const seen: unknown[] = [];
    const run = channel.remote.run({ x: 1 }, { onProgress: (value) => seen.push(value) });
    const request = await peer.next() as {
      id: number;
      params: { x: number; workDoneToken?: string; _meta?: { progressToken: string } };
    };
    assert.equal(request.params.x, 1);
    const token = dialect === "lsp"
      ? request.params.workDoneToken!
      : request.params._meta!.progressToken;
    assert.equal(typeof token, "string");
    if (dialect === "lsp") {
      await peer.send({
        jsonrpc: "2.0",
        method: "$/progress",
        params: { token, value: { kind: "report", percentage: 50 } },
      });
    } else {
      await peer.send({
        jsonrpc: "2.0",
        method: "notifications/progress",
        params: { progressToken: token, progress: 1, total: 2 },
      });
    }
    await peer.send({ jsonrpc: "2.0", id: request.id, result: "done" });
    assert.equal(await run, "done");
    assert.deepEqual(
      seen,
      dialect === "lsp" ? [{ kind: "report", percentage: 50 }] : [{ progress: 1, total: 2 }],
    );
    await channel.close();
    await peer.close();
  }
});

Deno.test("jsonrpc: hostile input: an unknown id in a response, a Content-Length that lies", async () => {
  const { channel, peer, errors } = await setup<{ echo(p: object): object }>({
    framing: "content-length",
    maxFrameBytes: 2048,
    handlers: { echo: (params: object) => params },
  });
  // A response to no request: reported, dropped, the connection goes on.
  await peer.send({ jsonrpc: "2.0", id: 999, result: 1 });
  await peer.send({ jsonrpc: "2.0", id: "x", result: 1 });
  await peer.send({ jsonrpc: "2.0", id: 1, method: "echo", params: { a: 1 } });
  assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 1, result: { a: 1 } });
  assert.equal(errors.length, 2);
  assert.match(errors[0].message, /id 999, which no request in flight has/);

  // A Content-Length that says less than the body: the body is cut, the cut JSON is a parse
  // error (-32700), and the rest is read as a header section: with the next message's
  // header it has no Content-Length, the framing is lost, the connection ends (typed).
  const body = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "echo", params: {} });
  await peer.raw(`Content-Length: 10\r\n\r\n${body}`);
  assert.equal((await peer.next() as { error: { code: number } }).error.code, -32700);
  await peer.send({ jsonrpc: "2.0", id: 3, method: "echo", params: {} });
  const closed = await channel.closed.then(() => undefined, (error) => error);
  assert.equal(closed.name, "ConnectionClosedError");
  assert.equal(closed.cause.name, "ProtocolError");
  await peer.close();
});

Deno.test("jsonrpc: a message over maxFrameBytes ends the connection with FrameTooLargeError; pending calls settle", async () => {
  for (const framing of ["ndjson", "content-length"] as const) {
    const { channel, peer } = await setup<{ wait(p: object): string }>({
      framing,
      maxFrameBytes: 1024,
    });
    const pending = channel.remote.wait({});
    await peer.next();
    await peer.send({ jsonrpc: "2.0", method: "x", params: { pad: "y".repeat(2000) } });
    const error = await pending.then(() => undefined, (error) => error);
    assert.equal(error.name, "ConnectionClosedError");
    let cause = error.cause;
    while (cause !== undefined && cause.name !== "FrameTooLargeError") cause = cause.cause;
    assert.equal(cause?.name, "FrameTooLargeError", String(error.cause));
    // Sending over the limit is a typed error too, before anything is written.
    await assert.rejects(channel.remote.wait({}), { name: "ConnectionClosedError" });
    await channel.closed.catch(() => {});
    await peer.close();
  }
  const { channel, peer } = await setup<{ big(p: object): string }>({ maxFrameBytes: 1024 });
  await assert.rejects(channel.remote.big({ pad: "z".repeat(2000) }), {
    name: "FrameTooLargeError",
  });
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc: every pending call settles when the peer exits", async () => {
  const { channel, peer } = await setup<{ a(p: object): string; b(p: object): string }>();
  const calls = [channel.remote.a({}), channel.remote.b({})];
  await peer.next();
  await peer.next();
  await peer.close();
  for (const call of calls) await assert.rejects(call, { name: "ConnectionClosedError" });
  await channel.close();
});

Deno.test("jsonrpc: streams do not cross JSON-RPC: a stream param and a streaming handler fail typed", async () => {
  const { channel, peer } = await setup<{ take(p: AsyncIterable<number>): number }>({
    handlers: {
      async *many() {
        yield 1;
      },
    },
  });
  async function* numbers() {
    yield 1;
  }
  // Refused here, before anything is sent: the engine knows the wire has no streams.
  await assert.rejects(channel.remote.take(numbers()), (error: Error) => {
    assert.ok(error instanceof TypeError, String(error));
    assert.match(error.message, /cannot take a stream/);
    return true;
  });
  await peer.send({ jsonrpc: "2.0", id: 1, method: "many" });
  const answer = await peer.next() as {
    id: number;
    method?: string;
    error: { code: number; message: string };
  };
  assert.equal(answer.method, undefined, "the stream call was sent to the peer");
  assert.equal(answer.id, 1);
  assert.equal(answer.error.code, -32603);
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc: maxFrameBytes counts UTF-8 bytes: results, notifications, a batch's answers", async () => {
  // 1200 characters, 2400 bytes: over 2048 bytes, though under 2048 characters.
  const wide = "é".repeat(1200);
  for (const framing of ["ndjson", "content-length"] as const) {
    const [a, b] = memoryPair();
    const server = await openJsonRpc(a, {
      framing,
      maxFrameBytes: 2048,
      handlers: { big: () => wide, small: () => "ok", note: () => {} },
    });
    const client = await openJsonRpc<
      { big(p: object): string; small(p: object): string; note(p: object): void }
    >(b, {
      framing,
      maxFrameBytes: 2048,
    });
    // Refused by the side that would send it; the connection goes on.
    await assert.rejects(client.remote.big({}), {
      name: "RemoteError",
      message: /The result of "big" \(2\d{3} bytes\) exceeds maxFrameBytes \(2048\)/,
    });
    assert.throws(() => client.notify("note", { s: wide }), { name: "FrameTooLargeError" });
    assert.equal(await client.remote.small({}), "ok");
    await Promise.all([client.close(), server.close()]);
  }
  const { channel, peer } = await setup({
    maxFrameBytes: 4096,
    handlers: { big: () => wide }, // ~2440 bytes an answer: two do not fit
  });
  await peer.send([
    { jsonrpc: "2.0", id: 1, method: "big" },
    { jsonrpc: "2.0", id: 2, method: "big" },
  ]);
  const answer = await peer.next() as { result?: string; error?: { message: string } }[];
  assert.ok(new TextEncoder().encode(JSON.stringify(answer)).length <= 4096);
  assert.equal(answer[0].result, wide);
  assert.match(answer[1].error!.message, /\(2\d{3} bytes\) would take the batch's answer past/);
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc: a partialResultToken waiting to be sent is taken; a dropped call frees it", async () => {
  interface Api {
    hold(p: object): string;
    items(p: { partialResultToken: string }): AsyncIterable<unknown>;
  }
  const { channel, peer } = await setup<Api>({ framing: "content-length", maxInFlight: 1 });
  const held = channel.remote.hold({});
  const first = await peer.next() as { id: number };
  // Both wait for the one place: the second may not share the first's token.
  const b = Array.fromAsync(channel.remote.items({ partialResultToken: "t" }));
  await assert.rejects(Array.fromAsync(channel.remote.items({ partialResultToken: "t" })), {
    name: "TypeError",
    message: /already the token of a call in flight or waiting to be sent/,
  });
  // A call that waited and was dropped unsent frees its token.
  const controller = new AbortController();
  const dropped = Array.fromAsync(
    channel.remote.items({ partialResultToken: "u" }, { signal: controller.signal }),
  );
  controller.abort(new Error("never mind"));
  await assert.rejects(dropped, { message: "never mind" });
  const u = Array.fromAsync(channel.remote.items({ partialResultToken: "u" }));
  await peer.send({ jsonrpc: "2.0", id: first.id, result: "done" });
  assert.equal(await held, "done");
  const second = await peer.next() as { id: number };
  await peer.send({ jsonrpc: "2.0", method: "$/progress", params: { token: "t", value: ["b1"] } });
  await peer.send({ jsonrpc: "2.0", id: second.id, result: ["b-final"] });
  assert.deepEqual(await b, [["b1"], ["b-final"]]);
  const third = await peer.next() as { id: number };
  await peer.send({ jsonrpc: "2.0", id: third.id, result: ["u-final"] });
  assert.deepEqual(await u, [["u-final"]]);
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc: an id no number here holds exactly is refused, not answered under another", async () => {
  const { channel, peer } = await setup({ handlers: { ping: () => "pong" } });
  for (const id of ["1e400", "12345678901234567890", "9007199254740993"]) {
    await peer.raw(`{"jsonrpc":"2.0","id":${id},"method":"ping"}\n`);
    const answer = await peer.next() as { id: unknown; error: { code: number; message: string } };
    assert.equal(answer.id, null, id);
    assert.equal(answer.error.code, -32600);
    assert.match(answer.error.message, /not a number this side holds exactly/);
  }
  // Within the range, and fractions, are answered under the id sent.
  for (const id of [9007199254740991, 1.5, -3]) {
    await peer.send({ jsonrpc: "2.0", id, method: "ping" });
    assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id, result: "pong" });
  }
  await channel.close();
  await peer.close();
});
