// The peer's text in conduit's own error messages: a GOODBYE's code and reason, a CANCEL's
// reason and the bytes a codec could not decode are quoted with their control characters
// escaped (wires' trace does the same), so that a peer cannot start a log line of its own or
// drive the terminal that shows the user's errors.

import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { ConduitError } from "../errors.ts";
import { cancelBody } from "../protocol/_frame_table.ts";
import { goodbyeBody } from "../protocol/handshake.ts";
import { memoryPair } from "../transports/memory.ts";
import { json, RawPeer } from "./_test_raw_peer.ts";
import type { CallContext } from "./call_context.ts";
import { type Channel, openChannel } from "./channel.ts";
import type { ConnectionClosedError } from "./errors.ts";

/** What a terminal acts on rather than shows (line breaks, escapes, bidi overrides). */
// deno-lint-ignore no-control-regex
const UNPRINTABLE = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** A reason that tries to start a log line of its own and colour the terminal. */
const FORGED = "stop\nconduit: all is well \x1b[31m\u202e";
/** {@linkcode FORGED} as conduit's messages quote it. */
const ESCAPED = "stop\\u000aconduit: all is well \\u001b[31m\\u202e";

/** The messages conduit wrote in `error` and its causes (a codec's own error is not one). */
function messagesOf(error: unknown): string[] {
  const messages: string[] = [];
  for (let e = error; e instanceof Error; e = e.cause) {
    if (e instanceof ConduitError) messages.push(e.message);
  }
  return messages;
}

function unexpected(value: unknown): never {
  throw new Error(`expected a failure, got ${JSON.stringify(value)}`);
}

function assertEscaped(error: unknown, escaped = ESCAPED): void {
  const messages = messagesOf(error);
  assert.ok(messages.some((m) => m.includes(escaped)), JSON.stringify(messages));
  for (const message of messages) {
    assert.ok(!UNPRINTABLE.test(message), `unescaped: ${JSON.stringify(message)}`);
  }
}

type Peer = Channel<Record<string, (param: unknown) => unknown>>;

async function opened(
  handlers: Record<string, (param: unknown, ctx: CallContext) => unknown> = {},
): Promise<{ peer: RawPeer; channel: Peer; [Symbol.asyncDispose](): Promise<void> }> {
  const [a, b] = memoryPair();
  const peer = new RawPeer(b);
  const opening = openChannel<Record<string, (param: unknown) => unknown>>(a, {
    codec: jsonCodec(),
    handlers,
  });
  await peer.handshake();
  const channel = await opening;
  return {
    peer,
    channel,
    async [Symbol.asyncDispose]() {
      await peer.close();
      await channel.close().catch(() => {});
    },
  };
}

Deno.test("peer text: a GOODBYE with a code fails pending calls with its reason escaped", async () => {
  await using t = await opened();
  const pending = t.channel.call("slow", null).then(unexpected, (e: Error) => e);
  await t.peer.nextOf("call");
  await t.peer.send({ kind: "goodbye", body: goodbyeBody({ code: FORGED, reason: FORGED }) });
  const error = await pending;
  assertEscaped(error);
  // Its words themselves, for a program to read, are the error's `goodbye`, as sent.
  assert.deepEqual((error as ConnectionClosedError).goodbye, { code: FORGED, reason: FORGED });
});

Deno.test("peer text: a call after the peer's GOODBYE quotes its reason escaped", async () => {
  await using t = await opened();
  const held = t.channel.call("slow", null).then(unexpected, (e: Error) => e);
  await t.peer.nextOf("call");
  await t.peer.send({ kind: "goodbye", body: goodbyeBody({ reason: FORGED }) });
  await t.peer.nextOf("goodbye");
  const error = await t.channel.call("more", null).then(unexpected, (e: Error) => e);
  assert.match(String(error?.message), /the peer said goodbye/);
  assertEscaped(error);
  await t.peer.close();
  await held;
});

for (const kind of ["call", "notify"] as const) {
  Deno.test(`peer text: a ${kind} after the peer's GOODBYE names its method escaped`, async () => {
    await using t = await opened();
    // A call of this side's keeps the channel open past the peer's GOODBYE.
    const pending = t.channel.call("slow", null).then(unexpected, (e: Error) => e);
    await t.peer.nextOf("call");
    await t.peer.send({ kind: "goodbye", body: goodbyeBody({}) });
    await t.peer.send(
      kind === "call"
        ? { kind, id: 1, flags: 0, timeoutMs: 0, method: FORGED, body: json(null) }
        : { kind, method: FORGED, body: json(null) },
    );
    const error = await pending;
    assert.match(JSON.stringify(messagesOf(error)), /after the peer's GOODBYE/);
    assertEscaped(error);
  });
}

Deno.test("peer text: a GOODBYE refusing the handshake is quoted escaped", async () => {
  const [a, b] = memoryPair();
  const peer = new RawPeer(b);
  const opening = openChannel(a, { codec: jsonCodec() }).then(unexpected, (e: Error) => e);
  await peer.send({ kind: "goodbye", body: goodbyeBody({ code: "aborted", reason: FORGED }) });
  const error = await opening;
  assert.match(String(error?.message), /refused the handshake/);
  assertEscaped(error);
  await peer.close();
});

Deno.test("peer text: a CANCEL's reason reaches the handler's signal escaped", async () => {
  const reason = Promise.withResolvers<unknown>();
  await using t = await opened({
    wait: (_param, ctx) =>
      new Promise((_, reject) =>
        ctx.signal.addEventListener("abort", () => {
          reason.resolve(ctx.signal.reason);
          reject(ctx.signal.reason);
        })
      ),
  });
  await t.peer.send({ kind: "call", id: 1, flags: 0, timeoutMs: 0, method: "wait", body: json(0) });
  await t.peer.send({
    kind: "cancel",
    id: 1,
    receiverId: false,
    body: cancelBody(FORGED, undefined),
  });
  const error = await reason.promise;
  assert.match(String((error as Error).message), /The caller cancelled "wait": stop\\u000a/);
  assertEscaped(error);
});

Deno.test("peer text: a body the codec cannot decode is quoted escaped", async () => {
  await using t = await opened();
  const pending = t.channel.call("add", 1).then(unexpected, (e: Error) => e);
  const call = await t.peer.nextOf("call");
  // V8's JSON.parse quotes the start of what it could not parse.
  const body = new TextEncoder().encode("x\n\x1b[31m");
  await t.peer.send({ kind: "result", id: call!.id, body });
  const error = await pending;
  assert.match(String(error?.message), /could not decode/);
  assertEscaped(error, "x\\u000a\\u001b[31m");
});

Deno.test("peer text: a remote error's message is the remote handler's, kept verbatim", async () => {
  await using t = await opened();
  const pending = t.channel.call("add", 1).then(unexpected, (e: Error) => e);
  const call = await t.peer.nextOf("call");
  await t.peer.send({
    kind: "error",
    id: call!.id,
    receiverId: true,
    body: json({ name: "Error", message: FORGED }),
  });
  assert.equal((await pending)?.message, FORGED);
});
