import assert from "node:assert/strict";
import vectors from "../testdata/protocol/vectors.json" with { type: "json" };
import { encodeFrame } from "../framing/frame_decoder.ts";
import { AUTH_KIND, authProof, constantTimeEqual, parseNonce, toHex } from "./auth.ts";
import { helloBody, parseHello } from "./handshake.ts";

const fromHex = (hex: string) => Uint8Array.from(hex.match(/../g) ?? [], (h) => parseInt(h, 16));

for (const vector of vectors.auth.cases) {
  Deno.test(`protocol/auth: vector ${vector.name}`, async () => {
    const secret = fromHex(vector.secretHex);
    const a = parseHello(new TextEncoder().encode(vector.helloA), "json");
    const b = parseHello(new TextEncoder().encode(vector.helloB), "json");
    assert.ok(a.ok && b.ok);
    const nonceA = a.auth!.nonce!;
    const nonceB = b.auth!.nonce!;
    assert.equal(toHex(nonceA), vector.nonceA);
    assert.equal(toHex(nonceB), vector.nonceB);
    const proofA = await authProof(secret, nonceA, nonceB);
    const proofB = await authProof(secret, nonceB, nonceA);
    assert.equal(toHex(proofA), vector.proofA);
    assert.equal(toHex(proofB), vector.proofB);
    assert.equal(toHex(encodeFrame(new Uint8Array([AUTH_KIND, ...proofA]))), vector.authFrameA);
    assert.equal(toHex(encodeFrame(new Uint8Array([AUTH_KIND, ...proofB]))), vector.authFrameB);
    assert.equal(
      new TextDecoder().decode(
        helloBody({
          codec: "json",
          maxFrameBytes: 67108864,
          maxInFlight: 1024,
          streamWindowBytes: 262144,
          authNonce: nonceA,
        }),
      ),
      vector.helloA,
    );
  });
}

Deno.test("protocol/auth: a HELLO's auth that is not an object with a method is invalid_hello", () => {
  for (const auth of [null, 5, "hmac-sha256", {}, { method: 1 }]) {
    const body = new TextEncoder().encode(JSON.stringify({
      protocol: "conduit",
      version: 1,
      codec: "json",
      maxFrameBytes: 1024,
      maxInFlight: 1,
      streamWindowBytes: 1,
      auth,
    }));
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
