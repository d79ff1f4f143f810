// A hostile or broken peer, scripted frame by frame: every violation closes the connection
// with a typed error, settles what was pending, and leaves nothing hanging.

import assert from "node:assert/strict";
import fc from "fast-check";
import { jsonCodec } from "../codecs/json.ts";
import { FrameTooLargeError } from "../errors.ts";
import { encodeFrame } from "../framing/frame_decoder.ts";
import { encodeEnvelope } from "../protocol/envelope.ts";
import { json, RawPeer } from "./_test_raw_peer.ts";
import { memory, type TransportKind, transportKinds } from "../transports/_test_pairs.ts";
import { type Channel, type ChannelOptions, openChannel } from "./channel.ts";
import { ConnectionClosedError, HandshakeError, ProtocolError } from "./errors.ts";
import type { CallContext } from "./call_context.ts";

interface Api {
  add(param: { a: number; b: number }): number;
  count(to: number): AsyncIterable<number>;
  wait(ms: number, ctx: CallContext): Promise<void>;
}

const handlers = {
  add: ({ a, b }: { a: number; b: number }) => a + b,
  wait: (_ms: number, ctx: CallContext) =>
    new Promise<void>((_, reject) => ctx.signal.addEventListener("abort", () => reject())),
};

async function underTest(
  kind: TransportKind,
  options: Partial<ChannelOptions> = {},
  hello: Record<string, unknown> = {},
): Promise<{ channel: Channel<Api>; peer: RawPeer } & AsyncDisposable> {
  const pair = await kind.pair();
  const peer = new RawPeer(pair.b);
  const opening = openChannel<Api>(pair.a, { codec: jsonCodec(), handlers, ...options });
  await peer.handshake(hello);
  const channel = await opening;
  return {
    channel,
    peer,
    async [Symbol.asyncDispose]() {
      // The scripted peer never says GOODBYE: closing its end ends the channel at once.
      await peer.close();
      await channel.close();
      await pair.cleanup();
    },
  };
}

/** Sends a CALL of `method` with `param` as JSON. */
function sendCall(
  peer: RawPeer,
  id: number,
  method: string,
  param: unknown,
  timeoutMs = 0,
): Promise<void> {
  return peer.send({ kind: "call", id, flags: 0, timeoutMs, method, body: json(param) });
}

/** The channel closed because of a protocol error matching `pattern`, and said so. */
async function assertProtocolClose(
  channel: Channel<Api>,
  peer: RawPeer,
  pattern: RegExp,
): Promise<ConnectionClosedError> {
  const error = await channel.closed.then(() => assert.fail("closed cleanly"), (e) => e);
  assert.ok(error instanceof ConnectionClosedError, String(error));
  assert.ok(error.cause instanceof ProtocolError, String(error.cause));
  assert.match(error.cause.message, pattern);
  const goodbye = await peer.goodbye();
  assert.equal(goodbye.code, "protocol_error");
  await peer.ended();
  return error;
}

for (const kind of transportKinds) {
  const test = (name: string, fn: () => Promise<void>) =>
    Deno.test(`hostile peer over ${kind.name}: ${name}`, fn);

  test("garbage frames and unknown kinds close the connection; pending calls settle", async () => {
    for (const payload of [[0xff, 0xff, 0xff], [0x30, 1], [0x12], [0x10, 0x80]]) {
      await using t = await underTest(kind);
      const pending = t.channel.remote.add({ a: 1, b: 2 }).catch((e) => e);
      await t.peer.nextOf("call");
      await t.peer.sendBytes(encodeFrame(new Uint8Array(payload)));
      await assertProtocolClose(t.channel, t.peer, /./);
      const error = await pending;
      assert.ok(error instanceof ConnectionClosedError);
      assert.ok(error.cause instanceof ProtocolError);
    }
  });

  test("a result for an id never issued", async () => {
    await using t = await underTest(kind);
    await t.peer.send({ kind: "result", id: 99, body: json(1) });
    await assertProtocolClose(t.channel, t.peer, /call 99, which this side never started/);
  });

  test("a result sent twice", async () => {
    await using t = await underTest(kind);
    const result = t.channel.remote.add({ a: 1, b: 2 });
    const call = await t.peer.nextOf("call");
    await t.peer.send({ kind: "result", id: call!.id, body: json(3) });
    assert.equal(await result, 3);
    await t.peer.send({ kind: "result", id: call!.id, body: json(3) });
    await assertProtocolClose(t.channel, t.peer, /already finished/);
  });

  test("a stream frame after its end", async () => {
    await using t = await underTest(kind);
    const stream = t.channel.remote.count(2);
    const call = await t.peer.nextOf("call");
    const id = call!.id;
    await t.peer.send({ kind: "data", id, receiverId: true, body: json(1) });
    await t.peer.send({ kind: "end", id, receiverId: true });
    await t.peer.send({ kind: "data", id, receiverId: true, body: json(2) });
    await assertProtocolClose(
      t.channel,
      t.peer,
      /DATA\(R=1\) for call \d+, which has already finished/,
    );
    assert.deepEqual(await Array.fromAsync(stream), [1]);
  });

  test("RESULT after a stream's DATA", async () => {
    await using t = await underTest(kind);
    const stream = t.channel.remote.count(2);
    const call = await t.peer.nextOf("call");
    await t.peer.send({ kind: "data", id: call!.id, receiverId: true, body: json(1) });
    await t.peer.send({ kind: "result", id: call!.id, body: json(1) });
    await assertProtocolClose(t.channel, t.peer, /RESULT for call \d+ after its stream's DATA/);
    await assert.rejects(Array.fromAsync(stream), ConnectionClosedError);
  });

  test("DATA beyond the stream's credit", async () => {
    await using t = await underTest(kind, { streamWindowBytes: 1024 });
    const stream = t.channel.remote.count(100);
    const call = await t.peer.nextOf("call");
    const item = json("x".repeat(200));
    for (let i = 0; i < 10; i++) {
      await t.peer.send({ kind: "data", id: call!.id, receiverId: true, body: item });
    }
    await assertProtocolClose(t.channel, t.peer, /beyond the credit/);
    await assert.rejects(Array.fromAsync(stream), ConnectionClosedError);
  });

  test("an oversized frame is refused from its header", async () => {
    await using t = await underTest(kind, { maxFrameBytes: 4096 });
    const pending = t.channel.remote.add({ a: 1, b: 2 }).catch((e) => e);
    // Announce a 1 GiB frame and send only its header: the channel must not wait for it.
    await t.peer.sendBytes(new Uint8Array([0x40, 0, 0, 0]));
    const error = await assertProtocolClose(t.channel, t.peer, /exceeds maxFrameBytes \(4096\)/);
    assert.ok((error.cause as Error).cause instanceof FrameTooLargeError);
    assert.ok(await pending instanceof ConnectionClosedError);
  });

  test("CALL ids that do not increase, and frames for calls the peer never started", async () => {
    {
      await using t = await underTest(kind);
      await t.peer.send({
        kind: "call",
        id: 5,
        flags: 0,
        timeoutMs: 0,
        method: "add",
        body: json({ a: 1, b: 1 }),
      });
      assert.deepEqual(await t.peer.nextOf("result"), { kind: "result", id: 5, body: json(2) });
      await t.peer.send({
        kind: "call",
        id: 5,
        flags: 0,
        timeoutMs: 0,
        method: "add",
        body: json({ a: 1, b: 1 }),
      });
      await assertProtocolClose(t.channel, t.peer, /CALL id 5 is not greater/);
    }
    {
      await using t = await underTest(kind);
      await t.peer.send({ kind: "data", id: 7, receiverId: false, body: json(1) });
      await assertProtocolClose(t.channel, t.peer, /call 7, which the peer never started/);
    }
    {
      await using t = await underTest(kind);
      await t.peer.send({ kind: "credit", id: 3, receiverId: true, bytes: 10 });
      await assertProtocolClose(t.channel, t.peer, /call 3, which this side never started/);
    }
  });

  test("late CANCEL and CREDIT for finished calls are ignored", async () => {
    await using t = await underTest(kind);
    await t.peer.send({
      kind: "call",
      id: 1,
      flags: 0,
      timeoutMs: 0,
      method: "add",
      body: json({ a: 2, b: 2 }),
    });
    await t.peer.nextOf("result");
    await t.peer.send({ kind: "cancel", id: 1, receiverId: false, body: new Uint8Array(0) });
    await t.peer.send({ kind: "credit", id: 1, receiverId: false, bytes: 100 });
    await t.peer.send({ kind: "ping", nonce: 42 });
    assert.deepEqual(await t.peer.nextOf("pong"), { kind: "pong", nonce: 42 });
  });

  test("a peer that answers a cancelled call late does not break the channel", async () => {
    await using t = await underTest(kind);
    const controller = new AbortController();
    const pending = t.channel.remote.add({ a: 1, b: 1 }, { signal: controller.signal });
    const call = await t.peer.nextOf("call");
    controller.abort(new Error("stop"));
    await assert.rejects(pending, /stop/);
    const cancel = await t.peer.nextOf("cancel");
    assert.equal(cancel?.id, call!.id);
    // A RESULT sent before the peer saw the CANCEL is the call's terminal frame: it frees the
    // id, and is neither delivered nor a protocol error.
    await t.peer.send({ kind: "result", id: call!.id, body: json(2) });
    const next = t.channel.remote.add({ a: 3, b: 3 });
    const second = await t.peer.nextOf("call");
    await t.peer.send({ kind: "result", id: second!.id, body: json(6) });
    assert.equal(await next, 6);
  });

  test("a peer that ends the stream mid-frame or without GOODBYE", async () => {
    {
      await using t = await underTest(kind);
      const pending = t.channel.remote.add({ a: 1, b: 2 }).catch((e) => e);
      await t.peer.nextOf("call");
      await t.peer.sendBytes(new Uint8Array([0, 0, 0, 9, 0x92]));
      await t.peer.close();
      const error = await pending;
      assert.ok(error instanceof ConnectionClosedError);
      await assert.rejects(t.channel.closed, ConnectionClosedError);
    }
    {
      await using t = await underTest(kind);
      const pending = t.channel.remote.wait(0).catch((e) => e);
      await t.peer.nextOf("call");
      await t.peer.close();
      const error = await pending;
      assert.ok(error instanceof ConnectionClosedError);
      assert.match(error.message, /without a GOODBYE/);
    }
  });

  test("handshake: version mismatch, a first frame that is not HELLO, silence", async () => {
    {
      const pair = await kind.pair();
      const peer = new RawPeer(pair.b);
      const opening = openChannel(pair.a, { codec: jsonCodec() });
      await peer.send({ kind: "hello", body: json({ protocol: "conduit", version: 2 }) });
      const error = await opening.catch((e) => e);
      assert.ok(error instanceof HandshakeError);
      assert.equal(error.code, "version_mismatch");
      assert.match(error.message, /this side speaks 1, the peer 2/);
      const goodbye = await peer.goodbye();
      assert.equal(goodbye.code, "version_mismatch");
      await peer.close();
      await pair.cleanup();
    }
    {
      const pair = await kind.pair();
      const peer = new RawPeer(pair.b);
      const opening = openChannel(pair.a, { codec: jsonCodec() });
      await peer.send({ kind: "ping", nonce: 1 });
      const error = await opening.catch((e) => e);
      assert.ok(error instanceof HandshakeError);
      assert.equal(error.code, "protocol_error");
      assert.ok(error.cause instanceof ProtocolError);
      assert.match(error.message, /The first frame was PING, not HELLO/);
      await peer.close();
      await pair.cleanup();
    }
    {
      const pair = await kind.pair();
      const peer = new RawPeer(pair.b);
      const error = await openChannel(pair.a, { codec: jsonCodec(), handshakeTimeout: 30 })
        .catch((e) => e);
      assert.ok(error instanceof HandshakeError);
      assert.equal(error.code, "handshake_timeout");
      await peer.close();
      await pair.cleanup();
    }
  });

  test("heartbeat: a peer that stops answering is detected", async () => {
    await using t = await underTest(kind, { heartbeat: { interval: 10, timeout: 40 } });
    const pending = t.channel.remote.wait(0).catch((e) => e);
    assert.ok(await t.peer.nextOf("ping"));
    const error = await pending;
    assert.ok(error instanceof ConnectionClosedError);
    assert.match(error.message, /heartbeat timeout 40 ms/);
    const goodbye = await t.peer.goodbye();
    assert.equal(goodbye.code, "heartbeat_timeout");
  });

  test("random frames never crash or hang the channel", async () => {
    const frame = fc.uint8Array({ minLength: 1, maxLength: 12 });
    await fc.assert(
      fc.asyncProperty(fc.array(frame, { minLength: 1, maxLength: 6 }), async (frames) => {
        await using t = await underTest(kind);
        for (const payload of frames) await t.peer.sendBytes(encodeFrame(payload));
        await t.peer.send({ kind: "ping", nonce: 7 });
        // Either the channel answers the PING (it ignored or served the frames), or it closed
        // with a protocol error; both are fine, hanging or crashing is not.
        for (;;) {
          const reply = await t.peer.next();
          if (reply === undefined) break;
          if (reply.kind === "pong" && reply.nonce === 7) break;
        }
        await t.peer.close();
        await t.channel.closed.catch((e) => assert.ok(e instanceof ConnectionClosedError));
      }),
      { numRuns: kind.name === "memory" ? 60 : 20 },
    );
  });
}

for (const kind of transportKinds) {
  Deno.test(`hostile peer over ${kind.name}: a 2 MiB HELLO is refused from its header`, async () => {
    const pair = await kind.pair();
    const peer = new RawPeer(pair.b);
    // Long enough that a channel waiting for the body would fail with handshake_timeout.
    const opening = openChannel(pair.a, { codec: jsonCodec(), handshakeTimeout: 20_000 });
    // The header of a 2 MiB frame, and nothing of its body.
    await peer.sendBytes(new Uint8Array([0, 0x20, 0, 0]));
    const error = await opening.catch((e) => e);
    assert.ok(error instanceof HandshakeError, String(error));
    assert.equal(error.code, "protocol_error");
    assert.match(error.message, /2097152 bytes before the handshake, .* at most 1024 bytes/);
    const goodbye = await peer.goodbye();
    assert.equal(goodbye.code, "protocol_error");
    await peer.close();
    await pair.cleanup();
  });
}

for (const kind of transportKinds) {
  Deno.test(`hostile peer over ${kind.name}: calls past maxInFlight wait, unread`, async () => {
    await using t = await underTest(kind, { maxInFlight: 2 });
    const call = (id: number, method: string, timeoutMs: number, body: unknown) =>
      sendCall(t.peer, id, method, body, timeoutMs);
    // Two calls that end only at their deadlines fill maxInFlight; the third is held and
    // nothing after it is read (the PING stays unanswered) until one of them ends.
    await call(1, "wait", 50, 0);
    await call(2, "wait", 50, 0);
    await call(3, "add", 0, { a: 1, b: 2 });
    await t.peer.send({ kind: "ping", nonce: 9 });
    const seen: string[] = [];
    while (!seen.includes("pong")) {
      const frame = await t.peer.next();
      assert.ok(frame !== undefined, `the channel closed after ${seen.join(", ")}`);
      if (frame.kind === "error") {
        const body = JSON.parse(new TextDecoder().decode(frame.body));
        seen.push(`error ${frame.id} ${body.code}`);
      } else if (frame.kind === "result") seen.push(`result ${frame.id}`);
      else seen.push(frame.kind);
    }
    assert.deepEqual(seen.slice(-2), ["result 3", "pong"]);
    assert.deepEqual(seen.slice(0, -2).sort(), [
      "error 1 deadline_exceeded",
      "error 2 deadline_exceeded",
    ]);
  });
}

for (const kind of transportKinds) {
  const test = (name: string, fn: () => Promise<void>) =>
    Deno.test(`hostile peer over ${kind.name}: ${name}`, fn);

  test("errors fit a peer that takes 1024-byte frames; the channel stays up", async () => {
    const fail = (size: number) => {
      const big = "é".repeat(size);
      throw Object.assign(
        new RangeError(`too big: ${big}`, {
          cause: new Error(big, { cause: new Error(big) }),
        }),
        { code: "E_BIG", data: { big } },
      );
    };
    await using t = await underTest(
      kind,
      { handlers: { ...handlers, fail }, trustPeer: true },
      { maxFrameBytes: 1024 },
    );
    const decode = (body: Uint8Array) => JSON.parse(new TextDecoder().decode(body));
    // An unknown method of 1,000 bytes, echoed back in the error's message.
    const method = "m".repeat(1000);
    await sendCall(t.peer, 1, method, 0);
    const unknown = await t.peer.nextOf("error");
    assert.ok(encodeEnvelope(unknown!).length <= 1024, `${encodeEnvelope(unknown!).length}`);
    assert.equal(decode(unknown!.body).code, "method_not_found");
    assert.match(decode(unknown!.body).message, /^No method named "m+…$/);
    // A handler's error with a big message, data, causes and stack.
    for (const [id, size] of [[2, 100], [3, 5000]]) {
      await sendCall(t.peer, id, "fail", size);
      const error = await t.peer.nextOf("error");
      assert.ok(encodeEnvelope(error!).length <= 1024, `${encodeEnvelope(error!).length}`);
      const body = decode(error!.body);
      assert.equal(body.name, "RangeError");
      assert.equal(body.code, "E_BIG");
      assert.match(body.message, /^too big: é+/);
    }
    // A cancel whose reason is too long for the peer.
    const controller = new AbortController();
    const pending = t.channel.remote.wait(0, { signal: controller.signal }).catch((e) => e);
    await t.peer.nextOf("call");
    controller.abort("x".repeat(5000));
    await pending;
    const cancel = await t.peer.nextOf("cancel");
    assert.ok(encodeEnvelope(cancel!).length <= 1024, `${encodeEnvelope(cancel!).length}`);
    // Both directions still work.
    await sendCall(t.peer, 4, "add", { a: 2, b: 3 });
    assert.deepEqual(await t.peer.nextOf("result"), { kind: "result", id: 4, body: json(5) });
    const sum = t.channel.remote.add({ a: 1, b: 1 });
    const call = await t.peer.nextOf("call");
    await t.peer.send({ kind: "result", id: call!.id, body: json(2) });
    assert.equal(await sum, 2);
  });
}

Deno.test("hostile peer: a CALL whose timeoutMs is decades sets one deadline timer", async () => {
  // Past 2^31 - 1 ms a runtime fires a timer at once (with a warning): the deadline timer would
  // fire and re-arm every millisecond for as long as the call runs.
  await using test = await underTest(memory);
  const real = globalThis.setTimeout;
  const delays: number[] = [];
  globalThis.setTimeout = ((fn: () => void, ms?: number) => {
    delays.push(ms ?? 0);
    return real(fn, ms);
  }) as typeof setTimeout;
  try {
    await test.peer.send({
      kind: "call",
      id: 1,
      flags: 0,
      timeoutMs: 2 ** 40,
      method: "wait",
      body: json(0),
    });
    await new Promise((resolve) => real(resolve, 100));
  } finally {
    globalThis.setTimeout = real;
  }
  assert.ok(delays.length <= 1, `${delays.length} timers in 100 ms: ${delays.slice(0, 5)}`);
  assert.ok(delays.every((ms) => ms <= 2 ** 31 - 1), `delays ${delays}`);
});
