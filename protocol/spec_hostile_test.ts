// docs/protocol.md read clause by clause, as an implementer and as an attacker: each test holds
// the code to one sentence of the spec (named by its section) where they once disagreed, or
// where a hostile peer could find a gap between them.

import assert from "node:assert/strict";
import { helloBody, scripted } from "../channel/_test_raw_peer.ts";
import type { ChannelOptions } from "../channel/channel.ts";
import { HandshakeError } from "../channel/errors.ts";
import { FrameTooLargeError } from "../errors.ts";
import { decodeEnvelope, encodeEnvelope, type Envelope } from "./envelope.ts";
import { parseCallMeta, ProtocolError } from "./format.ts";
import { parseHello } from "./handshake.ts";
import { decodeErrorBody, encodeErrorBody } from "../wires/error_codec.ts";

const utf8 = new TextEncoder();
const text = new TextDecoder();
const BOM = [0xef, 0xbb, 0xbf];

function withBom(json: string): Uint8Array {
  return new Uint8Array([...BOM, ...utf8.encode(json)]);
}

// ---------------------------------------------------------------- §8 ERROR bodies

Deno.test("§8: a code set by default goes in its place, between message and data", () => {
  // A stream item too big for the peer, answered towards a trusted peer (stack on).
  const error = new FrameTooLargeError(2000, 1024);
  error.stack = "FrameTooLargeError: at somewhere";
  const body = encodeErrorBody(error, { stack: true, defaultCode: "frame_too_large" });
  assert.deepEqual(Object.keys(JSON.parse(text.decode(body))), [
    "name",
    "message",
    "code",
    "stack",
  ]);
});

Deno.test("§8: an ERROR body that is a JSON array is malformed, not an error without fields", () => {
  const error = decodeErrorBody(utf8.encode("[]"));
  assert.equal(error.name, "Error");
  assert.match(error.message, /malformed/);
});

Deno.test("§8: an ERROR body that is not valid UTF-8 is malformed", () => {
  const body = new Uint8Array([
    ...utf8.encode('{"name":"E","message":"'),
    0xff,
    ...utf8.encode('"}'),
  ]);
  const error = decodeErrorBody(body);
  assert.equal(error.name, "Error");
  assert.match(error.message, /malformed/);
});

Deno.test("§8: a cause that is not an error object is no cause", () => {
  for (const cause of ["null", '"why"', "[]", "7"]) {
    const error = decodeErrorBody(utf8.encode(`{"name":"E","message":"m","cause":${cause}}`));
    assert.equal(error.message, "m");
    assert.equal(error.cause, undefined, cause);
  }
});

// ---------------------------------------------------------------- JSON text, no BOM

Deno.test("§6: a CALL meta behind a byte order mark is not JSON text: a protocol error", () => {
  assert.throws(() => parseCallMeta(withBom('{"attempt":1}')), ProtocolError);
});

Deno.test("§5: a HELLO behind a byte order mark fails check 1 (protocol_mismatch)", () => {
  const hello = text.decode(helloBody());
  const outcome = parseHello(withBom(hello), "json");
  assert.equal(outcome.ok, false);
  assert.equal(!outcome.ok && outcome.code, "protocol_mismatch");
});

// ---------------------------------------------------------------- §8 CANCEL reasons

Deno.test("§8: a CANCEL's reason is shortened like a message: whole code points, longest start", async () => {
  await using t = await scripted();
  await t.peer.handshake({ maxFrameBytes: 1024 });
  await t.channel.opened;
  const controller = new AbortController();
  const pending = t.channel.remote.wait(0, { signal: controller.signal }).catch((e) => e);
  const call = await t.peer.nextOf("call");
  assert.ok(call);
  controller.abort(new Error("\u{1f600}".repeat(1000)));
  await pending;
  const cancel = await t.peer.nextOf("cancel");
  assert.ok(cancel && !cancel.receiverId);
  const frameBytes = encodeEnvelope(cancel).length;
  const reason: string = JSON.parse(text.decode(cancel.body)).reason;
  assert.ok(reason.isWellFormed(), "no lone surrogate");
  assert.ok(reason.endsWith("…"), reason.slice(-4));
  // The longest start that fits: one more code point (4 bytes) would not.
  assert.ok(frameBytes <= 1024 && frameBytes > 1024 - 4, `${frameBytes}`);
});

// ---------------------------------------------------------------- frames in the wrong state

/** The error `opened` rejects with after the peer's first frame is `frame`. */
async function refusedFirst(frame: Uint8Array): Promise<{ error: Error; goodbye: unknown }> {
  await using t = await scripted();
  assert.equal((await t.peer.next())?.kind, "hello");
  await t.peer.sendBytes(framed(frame));
  const error = await t.channel.opened.catch((e) => e);
  return { error, goodbye: (await t.peer.goodbye()).code };
}

function framed(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + payload.length);
  new DataView(out.buffer).setUint32(0, payload.length);
  out.set(payload, 4);
  return out;
}

Deno.test("§5: an AUTH as the first frame is named as a first frame that is not HELLO", async () => {
  const { error, goodbye } = await refusedFirst(new Uint8Array(33).fill(0xab, 1).fill(5, 0, 1));
  assert.ok(error instanceof HandshakeError, String(error));
  assert.equal(goodbye, "protocol_error");
  assert.match(String((error.cause as Error)?.message), /first frame was AUTH, not HELLO/);
});

Deno.test("§5, §14: a SHAPE or a CALL as the first frame is refused as not HELLO", async () => {
  for (
    const envelope of [
      { kind: "shape", id: 0, keys: ["a"] },
      { kind: "call", id: 1, flags: 0, timeoutMs: 0, method: "m", body: new Uint8Array(0) },
    ] satisfies Envelope[]
  ) {
    const { error, goodbye } = await refusedFirst(encodeEnvelope(envelope));
    assert.equal(goodbye, "protocol_error");
    assert.match(
      String((error.cause as Error)?.message),
      new RegExp(`first frame was ${envelope.kind.toUpperCase()}, not HELLO`),
    );
  }
});

/** Opens a channel with the raw peer, sends `frames` after the handshake, returns GOODBYE's code. */
async function answerTo(frames: Uint8Array[], options: Partial<ChannelOptions> = {}) {
  await using t = await scripted(options);
  await t.peer.handshake();
  await t.channel.opened;
  for (const frame of frames) await t.peer.sendBytes(framed(frame));
  const goodbye = await t.peer.goodbye();
  return goodbye;
}

const call = (id: number, method = "m"): Uint8Array =>
  encodeEnvelope({ kind: "call", id, flags: 0, timeoutMs: 0, method, body: utf8.encode("1") });

Deno.test("§10: a CALL or NOTIFY after the peer's GOODBYE is a protocol error", async () => {
  const goodbye = encodeEnvelope({ kind: "goodbye", body: new Uint8Array(0) });
  const notify = encodeEnvelope({ kind: "notify", method: "m", body: utf8.encode("1") });
  for (const late of [call(2), notify]) {
    let release = () => {};
    const held = new Promise<void>((resolve) => release = resolve);
    await using t = await scripted({
      handlers: { hold: () => held, m: () => 1 },
    } as Partial<ChannelOptions>);
    await t.peer.handshake();
    await t.channel.opened;
    // A call in flight keeps the connection open after both GOODBYEs.
    await t.peer.sendBytes(framed(call(1, "hold")));
    await t.peer.sendBytes(framed(goodbye));
    assert.deepEqual(await t.peer.goodbye(), {}, "the channel answers the GOODBYE");
    await t.peer.sendBytes(framed(late));
    assert.equal((await t.peer.goodbye()).code, "protocol_error");
    release();
  }
});

Deno.test("§9, §11: after the handshake, reserved kinds, a second HELLO, a HELLO with R and a long GOODBYE are protocol errors", async () => {
  const cases: Array<[string, Uint8Array]> = [
    ["reserved kind 0x07", new Uint8Array([0x07])],
    ["reserved kind 0x15", new Uint8Array([0x15, 1])],
    ["reserved kind 0x7f", new Uint8Array([0x7f])],
    ["HELLO again", encodeEnvelope({ kind: "hello", body: helloBody() })],
    ["HELLO with R", new Uint8Array([0x81, ...helloBody()])],
    [
      "GOODBYE of 1025 bytes",
      new Uint8Array([0x02, ...utf8.encode(`{"reason":"${"x".repeat(1011)}"}`)]),
    ],
    ["zero-length frame", new Uint8Array(0)],
    ["SHAPE without the feature", encodeEnvelope({ kind: "shape", id: 0, keys: ["a"] })],
    [
      "CALL with META and a meta of 4097 bytes",
      new Uint8Array([0x10, 1, 2, 0, 1, 0x6d, 0x81, 0x20]),
    ],
  ];
  for (const [name, frame] of cases) {
    assert.equal((await answerTo([frame])).code, "protocol_error", name);
  }
});

Deno.test("§6: a repeated header name keeps its last value; a meta with BOM or 33 headers closes", async () => {
  await using t = await scripted({
    handlers: { m: (_: unknown, ctx: { headers: Record<string, string> }) => ctx.headers },
  } as Partial<ChannelOptions>);
  await t.peer.handshake();
  await t.channel.opened;
  const meta = utf8.encode('{"headers":{"a":"1","b":"2","a":"3"}}');
  await t.peer.sendBytes(framed(encodeEnvelope({
    kind: "call",
    id: 1,
    flags: 0,
    timeoutMs: 0,
    method: "m",
    body: utf8.encode("0"),
    meta,
  })));
  const result = await t.peer.nextOf("result");
  assert.deepEqual(JSON.parse(text.decode(result!.body)), { a: "3", b: "2" });
  const bom = withBom('{"attempt":1}');
  await t.peer.sendBytes(framed(encodeEnvelope({
    kind: "call",
    id: 2,
    flags: 0,
    timeoutMs: 0,
    method: "m",
    body: utf8.encode("0"),
    meta: bom,
  })));
  assert.equal((await t.peer.goodbye()).code, "protocol_error");
});

// ---------------------------------------------------------------- encodeEnvelope's bytes

Deno.test("§3, §4: encodeEnvelope refuses what no frame can say, rather than write other bytes", () => {
  const body = new Uint8Array(0);
  const numbers: Envelope[] = [
    { kind: "ping", nonce: -1 },
    { kind: "pong", nonce: 1.5 },
    { kind: "result", id: 2 ** 53, body },
    { kind: "end", id: Number.NaN, receiverId: true },
    { kind: "credit", id: 1, receiverId: false, bytes: -3 },
    { kind: "call", id: 1, flags: 0, timeoutMs: -1, method: "m", body },
    { kind: "shape", id: 0.5, keys: ["a"] },
  ];
  for (const envelope of numbers) {
    assert.throws(() => encodeEnvelope(envelope), RangeError, JSON.stringify(envelope));
  }
  // Flag META without a meta: the body would be read as the meta's length.
  assert.throws(
    () =>
      encodeEnvelope({
        kind: "call",
        id: 1,
        flags: 2,
        timeoutMs: 0,
        method: "m",
        body: utf8.encode("{}"),
      }),
    RangeError,
  );
  // A lone surrogate has no UTF-8: the name sent would be another one (U+FFFD).
  assert.throws(
    () => encodeEnvelope({ kind: "notify", method: "a\ud800", body }),
    TypeError,
  );
  // Forbidden but faithful values stay encodable (a test peer's invalid frames).
  assert.deepEqual(
    encodeEnvelope({ kind: "credit", id: 0, receiverId: false, bytes: 0 }),
    new Uint8Array([0x22, 0, 0]),
  );
});

Deno.test("§4: a method name the spec forbids rejects its call, not sent as another name", async () => {
  await using t = await scripted();
  await t.peer.handshake();
  await t.channel.opened;
  const remote = t.channel.remote as Record<string, (p: unknown, o: object) => Promise<unknown>>;
  const cases: Array<[string, ErrorConstructor, RegExp]> = [
    ["get\ud800", TypeError, /lone surrogate/],
    ["", RangeError, /1 to 1024 UTF-8 bytes, got 0/],
    ["x".repeat(1025), RangeError, /1 to 1024 UTF-8 bytes, got 1025/],
  ];
  // A call whose param is a stream is refused alike, before it is queued.
  const items = async function* () {
    yield 1;
  };
  for (const param of [() => 1, items]) {
    for (const [method, type, message] of cases) {
      let outcome: unknown;
      try {
        outcome = await remote[method](param(), { timeout: 300 }).catch((e) => e);
      } catch (error) {
        outcome = `thrown synchronously: ${error}`;
      }
      assert.ok(outcome instanceof type, String(outcome));
      assert.match((outcome as Error).message, message);
    }
  }
  // Nothing was sent for them: the channel's next frame answers this PING.
  await t.peer.send({ kind: "ping", nonce: 9 });
  assert.deepEqual(await t.peer.next(), { kind: "pong", nonce: 9 });
  // None is in flight: closing needs no drain.
  const closing = performance.now();
  const close = t.channel.close();
  await t.peer.next(); // our GOODBYE
  await t.peer.send({ kind: "goodbye", body: new Uint8Array(0) });
  await close;
  assert.ok(performance.now() - closing < 1000, `closed in ${performance.now() - closing} ms`);
});

// ---------------------------------------------------------------- the doc's own vectors

const doc = await Deno.readTextFile(new URL("../docs/protocol.md", import.meta.url));

function section(number: number): string {
  const start = doc.indexOf(`\n## ${number}. `);
  assert.ok(start >= 0, `§${number}`);
  return doc.slice(start, doc.indexOf("\n## ", start + 1));
}

const fromHex = (hex: string) =>
  new Uint8Array(hex.trim().split(/\s+/).map((byte) => parseInt(byte, 16)));

Deno.test("§3: every row of the varint table decodes to its value, and encodes to its bytes", () => {
  const rows = [...section(3).matchAll(/^\| (.+?)\s+\| `([0-9a-f ]+)`\s+\|$/gm)];
  assert.equal(rows.length, 7);
  for (const [, label, hex] of rows) {
    const value = label.trim() === "2^53 − 1" ? Number.MAX_SAFE_INTEGER : Number(label);
    const bytes = fromHex(hex);
    // A PING's nonce is a bare varint after the type byte.
    const frame = new Uint8Array([0x03, ...bytes]);
    assert.deepEqual(encodeEnvelope({ kind: "ping", nonce: value }), frame, label);
    assert.deepEqual(decodeEnvelope(frame), { kind: "ping", nonce: value }, label);
  }
});

Deno.test("§12: each frame of the worked example decodes to what its line says", () => {
  const lines = section(12).split("\n");
  let checked = 0;
  for (let i = 0; i < lines.length; i++) {
    const match =
      /^(caller|handler) → \w+\s+((?:[0-9a-f]{2} ){3}[0-9a-f]{2}) {2}(.+?)(?:\s{2,}(.*))?$/
        .exec(lines[i]);
    if (match === null) continue;
    const [, , header, payloadHex, sameLine] = match;
    const said = (sameLine ?? lines[i + 1]).trim();
    const payload = fromHex(payloadHex);
    assert.equal(new DataView(fromHex(header).buffer).getUint32(0), payload.length, said);
    const envelope = decodeEnvelope(payload) as Record<string, unknown> & Envelope;
    const [kindWord, ...fields] = said.split(" ");
    const [, kind, r] = /^([A-Z]+)(?:\(R=([01])\))?$/.exec(kindWord)!;
    assert.equal(envelope.kind, kind.toLowerCase(), said);
    if (r !== undefined) assert.equal((payload[0] & 0x80) !== 0, r === "1", said);
    for (const field of fields) {
      const [name, value] = field.includes("=") ? field.split(/=(.*)/) : ["method", field];
      if (name === "body") {
        assert.deepEqual(JSON.parse(text.decode(envelope.body as Uint8Array)), JSON.parse(value));
      } else {
        assert.deepEqual(envelope[name], JSON.parse(value), `${said}: ${name}`);
      }
    }
    checked++;
  }
  assert.equal(checked, 7);
  // "call 2 with a 5 s deadline (5000 = `88 27`)", which its line does not repeat.
  const count = /^caller → handler\s+00 00 00 0c {2}([0-9a-f ]+?)\s{2,}/m.exec(section(12))!;
  assert.equal((decodeEnvelope(fromHex(count[1])) as { timeoutMs: number }).timeoutMs, 5000);
});
