// The decisions of docs/protocol.md that a conversation in testdata/protocol/vectors.json
// cannot show on its own (the channel as caller, timers, sizes of what it sends, what its API
// reports). Each names the section it holds the channel to.

import assert from "node:assert/strict";
import { encodeFrame } from "../framing/frame_decoder.ts";
import { concat } from "../framing/_test_util.ts";
import { helloBody, json, scripted } from "./_test_raw_peer.ts";
import { memory } from "../transports/_test_pairs.ts";
import { Channel } from "./channel.ts";
import { encodeEnvelope, type Envelope } from "../protocol/envelope.ts";
import { ConnectionClosedError, HandshakeError, ProtocolError } from "./errors.ts";

const text = new TextDecoder();

function bodyOf(frame: Envelope | undefined): Record<string, unknown> {
  const body = (frame as { body?: Uint8Array } | undefined)?.body;
  assert.ok(body, `a frame with a body, got ${frame?.kind}`);
  return body.length === 0 ? {} : JSON.parse(text.decode(body));
}

Deno.test("§10: no HELLO within the handshake timeout sends GOODBYE code handshake_timeout", async () => {
  await using t = await scripted({ handshakeTimeout: 20 });
  assert.equal((await t.peer.next())?.kind, "hello");
  const goodbye = await t.peer.nextOf("goodbye");
  assert.equal(bodyOf(goodbye).code, "handshake_timeout");
  const error = await t.channel.opened.catch((e) => e);
  assert.ok(error instanceof HandshakeError);
  assert.equal(error.code, "handshake_timeout");
});

Deno.test("§2: a HELLO over 1024 bytes fails the handshake as a protocol error", async () => {
  await using t = await scripted();
  const body = helloBody({ pad: "x".repeat(1024) });
  await t.peer.send({ kind: "hello", body });
  const error = await t.channel.opened.catch((e) => e);
  assert.ok(error instanceof HandshakeError, String(error));
  assert.equal(error.code, "protocol_error");
  assert.match(String((error.cause as Error).message), /1\d{3} bytes .* at most 1024 bytes/);
  assert.equal(bodyOf(await t.peer.nextOf("goodbye")).code, "protocol_error");
});

Deno.test("§2: a GOODBYE over 1024 bytes is a protocol error", async () => {
  await using t = await scripted();
  await t.peer.handshake();
  await t.channel.opened;
  await t.peer.send({ kind: "goodbye", body: json({ reason: "x".repeat(1024) }) });
  const error = await t.channel.closed.catch((e) => e);
  assert.ok(error instanceof ConnectionClosedError);
  assert.ok(error.cause instanceof ProtocolError, String(error.cause));
  assert.equal(bodyOf(await t.peer.nextOf("goodbye")).code, "protocol_error");
});

Deno.test("§2: the GOODBYE conduit sends fits 1024 bytes even when its reason quotes the peer", async () => {
  await using t = await scripted();
  // Each `"` is 2 bytes in the HELLO, and 4 once the reason quoting it is itself JSON.
  const body = helloBody({ protocol: '"'.repeat(430) });
  assert.ok(body.length + 1 <= 1024);
  await t.peer.send({ kind: "hello", body });
  const goodbye = await t.peer.nextOf("goodbye");
  assert.ok(goodbye && goodbye.kind === "goodbye");
  assert.ok(goodbye.body.length + 1 <= 1024, `a GOODBYE of ${goodbye.body.length + 1} bytes`);
  const parsed = bodyOf(goodbye);
  assert.equal(parsed.code, "protocol_mismatch");
  assert.match(String(parsed.reason), /^The peer does not speak conduit/);
});

Deno.test("§7, §8: a param stream item too big for the handler fails the stream with ERROR(R=0) code frame_too_large", async () => {
  await using t = await scripted();
  await t.peer.handshake({ maxFrameBytes: 1024 });
  await t.channel.opened;
  async function* items() {
    yield "small";
    yield "x".repeat(1100);
  }
  const pending = t.channel.remote.sum(items()).catch((e) => e);
  const call = await t.peer.nextOf("call");
  assert.ok(call && call.kind === "call");
  assert.equal(call.flags, 1);
  assert.equal((await t.peer.next())?.kind, "data");
  const failure = await t.peer.next();
  assert.ok(failure?.kind === "error" && !failure.receiverId, JSON.stringify(failure));
  assert.equal(failure.id, call.id);
  const error = bodyOf(failure);
  assert.equal(error.code, "frame_too_large");
  assert.equal(error.name, "FrameTooLargeError");
  await t.peer.send({
    kind: "error",
    id: call.id,
    receiverId: true,
    body: json({ name: "Error", message: "param stream failed" }),
  });
  assert.match(String((await pending as Error).message), /param stream failed/);
});

Deno.test("§7, §8: an undecodable param stream item reaches the handler as invalid_param, and frames crossing the CANCEL are ignored", async () => {
  let seen: unknown;
  await using t = await scripted({
    handlers: {
      async sum(items: AsyncIterable<number>) {
        let total = 0;
        try {
          for await (const item of items) total += item;
        } catch (error) {
          seen = error;
          throw error;
        }
        return total;
      },
    },
  });
  await t.peer.handshake();
  await t.channel.opened;
  // One write, so the DATA and END after the bad item reach the channel before anything
  // it sends can reach the peer: they cross its CANCEL.
  const frames: Envelope[] = [
    { kind: "call", id: 1, flags: 1, timeoutMs: 0, method: "sum", body: new Uint8Array(0) },
    { kind: "data", id: 1, receiverId: false, body: new TextEncoder().encode("{") },
    { kind: "data", id: 1, receiverId: false, body: json(2) },
    { kind: "end", id: 1, receiverId: false },
  ];
  await t.peer.sendBytes(concat(frames.map((f) => encodeFrame(encodeEnvelope(f)))));
  const cancel = await t.peer.next();
  assert.ok(cancel?.kind === "cancel" && cancel.receiverId && cancel.id === 1);
  const failure = await t.peer.next();
  assert.ok(failure?.kind === "error" && failure.receiverId);
  assert.equal(bodyOf(failure).code, "invalid_param");
  assert.ok(seen instanceof Error);
  assert.equal(seen.name, "InvalidParamError");
  assert.equal((seen as Error & { code?: string }).code, "invalid_param");
  assert.ok(seen.cause instanceof Error);
  // Still open: the DATA and END that crossed the CANCEL were no protocol error.
  await t.peer.send({ kind: "ping", nonce: 5 });
  const pong = await t.peer.next();
  assert.ok(pong?.kind === "pong" && pong.nonce === 5);
});

/**
 * Opens `t`, starts a call the peer never answers, and closes: returns once the channel's own
 * (code-less) GOODBYE arrived, with the call's outcome and the close still pending.
 */
async function closingWithCallInFlight(t: Awaited<ReturnType<typeof scripted>>) {
  await t.peer.handshake();
  await t.channel.opened;
  const pending: Promise<unknown> = t.channel.remote.never(1).catch((e) => e);
  assert.ok(await t.peer.nextOf("call"));
  const closing = t.channel.close();
  assert.deepEqual(bodyOf(await t.peer.nextOf("goodbye")), {});
  return { pending, closing };
}

Deno.test("§10: the drain timeout after this side's GOODBYE sends GOODBYE code aborted", async () => {
  await using t = await scripted({ drainTimeout: 30 });
  const { pending, closing } = await closingWithCallInFlight(t);
  const aborted = bodyOf(await t.peer.nextOf("goodbye"));
  assert.equal(aborted.code, "aborted");
  assert.ok(await pending instanceof ConnectionClosedError);
  await closing;
});

Deno.test("§10: a protocol error after this side's GOODBYE sends GOODBYE code protocol_error", async () => {
  await using t = await scripted();
  const { pending, closing } = await closingWithCallInFlight(t);
  await t.peer.send({ kind: "result", id: 99, body: json(1) });
  const goodbye = bodyOf(await t.peer.nextOf("goodbye"));
  assert.equal(goodbye.code, "protocol_error");
  assert.match(String(goodbye.reason), /never started/);
  const error = await pending;
  assert.ok(error instanceof ConnectionClosedError);
  assert.ok(error.cause instanceof ProtocolError);
  await closing;
});

Deno.test("§2: a channel whose HELLO would exceed 1024 bytes is refused before it sends", async () => {
  const pair = await memory.pair();
  const name = "x".repeat(1000);
  const codec = { name, encode: (value: unknown) => json(value), decode: () => undefined };
  assert.throws(() => new Channel(pair.a, { codec }), RangeError);
  await pair.cleanup();
});
