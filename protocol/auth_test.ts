import assert from "node:assert/strict";
import vectors from "../testdata/protocol/vectors.json" with { type: "json" };
import { encodeFrame } from "../framing/frame_decoder.ts";
import { authProof, authTranscript, constantTimeEqual } from "./auth.ts";
import { AUTH_KIND } from "./format.ts";
import { helloBody, parseHello, parseNonce, toHex } from "./handshake.ts";

const fromHex = (hex: string) => Uint8Array.from(hex.match(/../g) ?? [], (h) => parseInt(h, 16));
const utf8 = new TextEncoder();
/** A valid HELLO's members, for the tests that change one. */
const HELLO = {
  protocol: "conduit",
  version: 1,
  codec: "json",
  maxFrameBytes: 1024,
  maxInFlight: 1,
  streamWindowBytes: 1,
};

for (const vector of vectors.auth.cases) {
  Deno.test(`protocol/auth: vector ${vector.name}`, () => {
    const secret = fromHex(vector.secretHex);
    const i = parseHello(utf8.encode(vector.helloI), "json");
    const r = parseHello(utf8.encode(vector.helloR), "json");
    assert.ok(i.ok && r.ok);
    assert.equal(toHex(i.auth!.nonce!), vector.nonceI);
    assert.equal(toHex(r.auth!.nonce!), vector.nonceR);
    assert.equal(i.auth!.role, "initiator");
    assert.equal(r.auth!.role, "responder");
    const transcript = authTranscript(utf8.encode(vector.helloI), utf8.encode(vector.helloR));
    assert.equal(toHex(transcript), vector.transcript);
    const proofI = authProof(secret, "initiator", transcript);
    const proofR = authProof(secret, "responder", transcript);
    assert.equal(toHex(proofI), vector.proofI);
    assert.equal(toHex(proofR), vector.proofR);
    assert.equal(toHex(encodeFrame(new Uint8Array([AUTH_KIND, ...proofI]))), vector.authFrameI);
    assert.equal(toHex(encodeFrame(new Uint8Array([AUTH_KIND, ...proofR]))), vector.authFrameR);
    const limits = {
      codec: "json",
      maxFrameBytes: 67108864,
      maxInFlight: 1024,
      streamWindowBytes: 262144,
    };
    const nonce = fromHex(vector.nonceI);
    assert.equal(
      new TextDecoder().decode(helloBody({ ...limits, auth: { nonce, role: "initiator" } })),
      vector.helloI,
    );
  });
}

Deno.test("protocol/auth: proofs are WebCrypto's HMAC-SHA-256 of the labelled transcript", async () => {
  const secret = crypto.getRandomValues(new Uint8Array(48));
  const transcript = authTranscript(utf8.encode('{"a":1}'), utf8.encode('{"b":2}'));
  const key = await crypto.subtle.importKey(
    "raw",
    secret,
    { name: "HMAC", hash: "SHA-256" },
    false,
    [
      "sign",
    ],
  );
  for (const role of ["initiator", "responder"] as const) {
    const message = new Uint8Array([...utf8.encode(`conduit-auth-v2\0${role}\0`), ...transcript]);
    const expected = new Uint8Array(await crypto.subtle.sign("HMAC", key, message));
    assert.deepEqual(authProof(secret, role, transcript), expected);
  }
});

Deno.test("protocol/auth: a transcript cannot be read two ways (each HELLO behind its length)", () => {
  const a = authTranscript(utf8.encode("ab"), utf8.encode("c"));
  const b = authTranscript(utf8.encode("a"), utf8.encode("bc"));
  assert.ok(!constantTimeEqual(a, b));
  assert.throws(() => authTranscript(new Uint8Array(0x10000), new Uint8Array(1)), RangeError);
});

Deno.test("protocol/auth: a HELLO's role is read; anything but the two roles is undefined", () => {
  for (
    const [role, read] of [
      ["initiator", "initiator"],
      ["responder", "responder"],
      ["x", undefined],
      [null, undefined],
    ]
  ) {
    const body = utf8.encode(JSON.stringify({
      ...HELLO,
      auth: { method: "hmac-sha256-v2", nonce: "00".repeat(32), role },
    }));
    const outcome = parseHello(body, "json");
    assert.ok(outcome.ok);
    assert.equal(outcome.auth?.role, read);
  }
});

Deno.test("protocol/handshake: a member set to null is not absent, and a HELLO must be UTF-8", () => {
  const hello = HELLO;
  for (const member of ["features", "auth"]) {
    const outcome = parseHello(utf8.encode(JSON.stringify({ ...hello, [member]: null })), "json");
    assert.equal(!outcome.ok && outcome.code, "invalid_hello", member);
  }
  const body = utf8.encode(JSON.stringify({ ...hello, codec: "json", note: "__" }));
  const at = body.indexOf(0x5f); // the first "_" of the note
  body[at] = 0xc3; // a lead byte, then "_": not UTF-8
  const outcome = parseHello(body, "json");
  assert.equal(!outcome.ok && outcome.code, "protocol_mismatch");
});

Deno.test("protocol/auth: a HELLO's auth that is not an object with a method is invalid_hello", () => {
  for (const auth of [null, 5, "hmac-sha256", {}, { method: 1 }]) {
    const body = utf8.encode(JSON.stringify({ ...HELLO, auth }));
    const outcome = parseHello(body, "json");
    assert.equal(!outcome.ok && outcome.code, "invalid_hello", JSON.stringify(auth));
  }
});

Deno.test("protocol/auth: nonces are 64 lowercase hex digits; comparison needs equal lengths", () => {
  assert.equal(parseNonce("0".repeat(63)), undefined);
  assert.equal(parseNonce("0".repeat(66)), undefined);
  assert.equal(parseNonce(12), undefined);
  assert.deepEqual(parseNonce("ff".repeat(32)), new Uint8Array(32).fill(255));
  assert.ok(!constantTimeEqual(new Uint8Array(32), new Uint8Array(31)));
});
