// Observability under a hostile peer: the wire trace shows what the peer chose without letting
// it forge or colour lines, the peer's method and error names cannot make metric series without
// bound, and telemetry neither leaks spans nor makes a call fail that would pass without it.

import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { openJsonRpc } from "../jsonrpc/mod.ts";
import { MAX_CALL_HEADERS } from "../protocol/format.ts";
import { memoryPair } from "../transports/memory.ts";
import { json, RawPeer } from "./_test_raw_peer.ts";
import { installFakeTelemetry, TRACEPARENT } from "./_testdata/_hostile_otel.ts";
import type { CallContext } from "./call_context.ts";
import { openChannel } from "./channel.ts";

const utf8 = new TextEncoder();

/** What a terminal acts on rather than shows (line breaks, escapes, bidi overrides). */
// deno-lint-ignore no-control-regex
const UNPRINTABLE = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** A method name, reason or body that tries to start a line of its own and drive the terminal. */
const FORGED = "x\nconduit ← RESULT #9 1 B 3\r\x1b[2J\x1b]0;owned\x07\u009b31m\u2028\u202e";

function assertPrintable(lines: string[]): void {
  for (const line of lines) {
    assert.ok(
      !UNPRINTABLE.test(line),
      `a trace line holds a control character: ${JSON.stringify(line)}`,
    );
  }
}

Deno.test("observability hostile: a peer's method, reasons and bodies cannot forge conduit trace lines", async () => {
  const lines: string[] = [];
  const [a, b] = memoryPair();
  const peer = new RawPeer(b);
  const opening = openChannel(a, {
    codec: jsonCodec(),
    handlers: { add: (n: number) => n + 1 },
    trace: (line) => lines.push(line),
  });
  await peer.handshake();
  const channel = await opening;
  await peer.send({ kind: "call", id: 1, flags: 0, timeoutMs: 0, method: FORGED, body: json(1) });
  assert.equal((await peer.nextOf("error"))?.id, 1);
  await peer.send({ kind: "notify", method: FORGED, body: json(FORGED) });
  await peer.send({ kind: "goodbye", body: utf8.encode(FORGED) });
  await peer.nextOf("goodbye");
  await peer.close();
  await channel.close();
  assert.ok(
    lines.some((line) => line.startsWith("conduit ← CALL #1 x\\u000aconduit")),
    lines.join("\n"),
  );
  assert.ok(lines.some((line) => line.startsWith("conduit ← GOODBYE x\\u000a")), lines.join("\n"));
  assert.ok(!lines.some((line) => line.startsWith("conduit ← RESULT")));
  assertPrintable(lines);
});

Deno.test("observability hostile: a JSON-RPC peer cannot forge or colour trace lines", async () => {
  const lines: string[] = [];
  const [a, b] = memoryPair();
  const opening = openJsonRpc(a, {
    framing: "content-length",
    onRequest: () => 1,
    onProtocolError: () => {},
    trace: (line) => lines.push(line),
  });
  const writer = b.writable.getWriter();
  const reader = b.readable.getReader();
  const send = async (text: string) => {
    const bytes = utf8.encode(text);
    await writer.write(utf8.encode(`Content-Length: ${bytes.length}\r\n\r\n`));
    await writer.write(bytes);
  };
  // Valid JSON: line breaks between tokens, and escapes that decode to control characters.
  await send(`{"jsonrpc":"2.0",\r\n"id":1,\n"method":${JSON.stringify(FORGED)}}`);
  // Not JSON at all.
  await send(`\x1b[2J${FORGED}`);
  const server = await opening;
  let answers = "";
  while (!answers.includes('"id":1')) {
    answers += new TextDecoder().decode((await reader.read()).value);
  }
  await writer.close().catch(() => {});
  await server.close();
  await reader.cancel().catch(() => {});
  await b.close().catch(() => {});
  assert.ok(
    lines.some((line) => line.startsWith("jsonrpc ← REQUEST 1 x\\u000a")),
    lines.join("\n"),
  );
  assertPrintable(lines);
});

Deno.test("observability hostile: a catch-all serving thousands of method names keeps metric series bounded", async () => {
  using telemetry = installFakeTelemetry();
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openJsonRpc(a, { framing: "content-length", onRequest: (method) => method.length }),
    openJsonRpc<Record<string, (param: object) => number>>(b, { framing: "content-length" }),
  ]);
  const names = 3000;
  for (let i = 0; i < names; i += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, j) => client.remote[`peer.${i + j}`]({})));
  }
  await Promise.all([client.close(), server.close()]);
  const methods = new Set(
    telemetry.recorded.get("rpc.server.duration")!.map((point) => point["rpc.method"]),
  );
  assert.ok(methods.size <= 1025, `${methods.size} method series for ${names} method names`);
  assert.ok(methods.has("peer.0") && methods.has("_OTHER"));
  // Spans are one per call, not series: they keep the method's name.
  assert.ok(telemetry.spans.some((span) => span.kind === 1 && span.name === `peer.${names - 1}`));
  const inFlight = telemetry.observe().get("rpc.server.in_flight")!;
  assert.ok(inFlight.length <= 1025 && inFlight.every((point) => point.value === 0));
});

Deno.test("observability hostile: the peer's error names keep the caller's metric series bounded", async () => {
  using telemetry = installFakeTelemetry();
  let failures = 0;
  const handlers = {
    fail: () => {
      const error = new Error("no");
      error.name = `Chosen${failures++}Error`;
      throw error;
    },
  };
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openChannel(a, { codec: jsonCodec(), handlers }),
    openChannel<typeof handlers>(b, { codec: jsonCodec() }),
  ]);
  for (let i = 0; i < 2000; i++) await assert.rejects(client.remote.fail());
  await Promise.all([client.close(), server.close()]);
  const statuses = new Set(
    telemetry.recorded.get("rpc.client.duration")!.map((point) => point["rpc.status"]),
  );
  assert.ok(statuses.size <= 65, `${statuses.size} status series for 2000 error names`);
  assert.ok(statuses.has("Chosen0Error") && statuses.has("_OTHER"));
});

Deno.test("observability hostile: a stream call cancelled before it is read ends its span", async () => {
  using telemetry = installFakeTelemetry();
  const handlers = {
    count: async function* (to: number) {
      for (let i = 1; i <= to; i++) yield i;
    },
  };
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openChannel(a, { codec: jsonCodec(), handlers }),
    openChannel<typeof handlers>(b, { codec: jsonCodec() }),
  ]);
  const stream = client.remote.count(3);
  await new Promise((resolve) => setTimeout(resolve, 20));
  await stream.cancel();
  // The channel closed, nothing is in flight on either side.
  await Promise.all([client.close(), server.close()]);
  await new Promise((resolve) => setTimeout(resolve, 0));
  const open = telemetry.spans.filter((span) => span.ended !== 1);
  assert.deepEqual(open.map((span) => `${span.kind} ${span.name} ended ${span.ended}`), []);
  const inFlight = telemetry.observe().get("rpc.client.in_flight")!;
  assert.deepEqual(inFlight.map((point) => point.value), [0]);
});

Deno.test("observability hostile: the trace context never makes a call at the header limits fail", async () => {
  using _telemetry = installFakeTelemetry();
  const handlers = { headers: (_: null, ctx: CallContext) => ({ ...ctx.headers }) };
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openChannel(a, { codec: jsonCodec(), handlers }),
    openChannel<typeof handlers>(b, { codec: jsonCodec() }),
  ]);
  // As many headers as a call may carry.
  const many: Record<string, string> = {};
  for (let i = 0; i < MAX_CALL_HEADERS; i++) many[`h${i}`] = "v";
  assert.deepEqual(await client.remote.headers(null, { headers: many }), many);
  // Nearly the 4096 bytes a call's meta may take.
  const large = {
    a: "x".repeat(1000),
    b: "x".repeat(1000),
    c: "x".repeat(1000),
    d: "x".repeat(990),
  };
  assert.deepEqual(await client.remote.headers(null, { headers: large, key: "k" }), large);
  // With room, the trace context goes with the call.
  assert.deepEqual(await client.remote.headers(null, { headers: { x: "1" } }), {
    x: "1",
    traceparent: TRACEPARENT,
  });
  await Promise.all([client.close(), server.close()]);
});
