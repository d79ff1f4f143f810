// The HELLO and GOODBYE bodies, checked without a transport.

import assert from "node:assert/strict";
import {
  goodbyeBody,
  helloBody,
  type HelloOptions,
  parseGoodbye,
  parseHello,
} from "./handshake.ts";
import { MAX_CONTROL_FRAME_BYTES, PROTOCOL_VERSION } from "./format.ts";

const ours: HelloOptions = {
  codec: "json",
  maxFrameBytes: 1 << 20,
  maxInFlight: 16,
  streamWindowBytes: 1 << 16,
};
const utf8 = new TextEncoder();

function hello(overrides: Record<string, unknown>): Uint8Array {
  const base = JSON.parse(new TextDecoder().decode(helloBody(ours)));
  return utf8.encode(JSON.stringify({ ...base, ...overrides }));
}

Deno.test("parseHello accepts this side's own HELLO and returns its limits", () => {
  const outcome = parseHello(helloBody(ours), "json");
  assert.deepEqual(outcome, {
    ok: true,
    peer: {
      version: PROTOCOL_VERSION,
      codec: "json",
      maxFrameBytes: 1 << 20,
      maxInFlight: 16,
      streamWindowBytes: 1 << 16,
      features: [],
    },
  });
});

Deno.test("parseHello refuses each mismatch with its GOODBYE code, naming both values", () => {
  const cases: Array<[Uint8Array, string, RegExp]> = [
    [utf8.encode("not json"), "protocol_mismatch", /protocol undefined/],
    [utf8.encode("[1]"), "protocol_mismatch", /protocol undefined/],
    [hello({ protocol: "grpc" }), "protocol_mismatch", /protocol "grpc"/],
    [hello({ version: 2 }), "version_mismatch", /this side speaks 1, the peer 2/],
    [hello({ codec: "msgpack" }), "codec_mismatch", /"json", the peer "msgpack"/],
    [hello({ features: [1] }), "invalid_hello", /features are not strings/],
    [hello({ features: "x" }), "invalid_hello", /features are not strings/],
    [hello({ maxFrameBytes: MAX_CONTROL_FRAME_BYTES - 1 }), "invalid_hello", /maxFrameBytes 1023/],
    [hello({ maxFrameBytes: 1.5e3 + 0.5 }), "invalid_hello", /maxFrameBytes 1500.5/],
    [hello({ maxInFlight: 0 }), "invalid_hello", /maxInFlight 0 \(must be an integer >= 1\)/],
    [hello({ streamWindowBytes: "8" }), "invalid_hello", /streamWindowBytes "8"/],
  ];
  for (const [body, code, message] of cases) {
    const outcome = parseHello(body, "json");
    assert.equal(outcome.ok, false);
    if (outcome.ok) continue;
    assert.equal(outcome.code, code);
    assert.match(outcome.message, message);
  }
});

Deno.test("parseHello caps an announced maxFrameBytes at 2^32 - 1 and keeps features", () => {
  const outcome = parseHello(hello({ maxFrameBytes: 2 ** 40, features: ["x"] }), "json");
  assert.ok(outcome.ok);
  assert.equal(outcome.peer.maxFrameBytes, 0xffff_ffff);
  assert.deepEqual(outcome.peer.features, ["x"]);
});

Deno.test("GOODBYE bodies round-trip; a graceful one is empty; junk reads as graceful", () => {
  assert.equal(goodbyeBody({}).length, 0);
  // A normal close may say why (an idle timeout): a reason without a code.
  assert.deepEqual(parseGoodbye(goodbyeBody({ reason: "idle for its idleTimeout (100 ms)" })), {
    reason: "idle for its idleTimeout (100 ms)",
  });
  assert.deepEqual(parseGoodbye(goodbyeBody({ code: "aborted", reason: "drain timeout" })), {
    code: "aborted",
    reason: "drain timeout",
  });
  const ascii = goodbyeBody({ code: "protocol_error", reason: "x".repeat(2000) });
  assert.equal(parseGoodbye(ascii).reason, "x".repeat(600));
  const wide = goodbyeBody({ code: "protocol_error", reason: "é".repeat(2000) });
  assert.ok(wide.length < MAX_CONTROL_FRAME_BYTES, `${wide.length} bytes`);
  // The longest start that fits: 37 bytes of JSON around 493 two-byte characters.
  assert.equal(parseGoodbye(wide).reason, "é".repeat(493));
  assert.equal(wide.length, MAX_CONTROL_FRAME_BYTES - 1);
  assert.deepEqual(parseGoodbye(utf8.encode("{")), {});
  assert.deepEqual(parseGoodbye(utf8.encode('{"code":5,"reason":"r"}')), { reason: "r" });
});

Deno.test("goodbyeBody: a long reason keeps its longest start in whole code points that fits", () => {
  for (const unit of ["a", "é", "\u{1f600}", "a\u{1f600}"]) {
    const reason = unit.repeat(1000);
    const body = goodbyeBody({ code: "protocol_error", reason });
    assert.ok(body.length < MAX_CONTROL_FRAME_BYTES, `${body.length} bytes`);
    const sent = parseGoodbye(body).reason!;
    assert.ok(sent.isWellFormed(), "no pair cut in two");
    assert.ok(reason.startsWith(sent));
    // One more code point would not fit.
    const longer = [...reason].slice(0, [...sent].length + 1).join("");
    const bytes = new TextEncoder().encode(
      JSON.stringify({ code: "protocol_error", reason: longer }),
    );
    assert.ok(
      longer.length > 600 || bytes.length >= MAX_CONTROL_FRAME_BYTES,
      `${[...sent].length}`,
    );
  }
});
