import assert from "node:assert/strict";
import fc from "fast-check";
import { hmacSha256, sha256 } from "./auth.ts";

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const fromHex = (text: string) => Uint8Array.from(text.match(/../g) ?? [], (h) => parseInt(h, 16));
const utf8 = new TextEncoder();

Deno.test("sha256: FIPS 180-4 examples and lengths around the block boundary", () => {
  assert.equal(
    hex(sha256(utf8.encode(""))),
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  );
  assert.equal(
    hex(sha256(utf8.encode("abc"))),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  assert.equal(
    hex(sha256(utf8.encode("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))),
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
});

Deno.test("hmacSha256: RFC 4231 test cases 1, 2, 4, 6 and 7", () => {
  const cases: Array<[string, string, string]> = [
    [
      "0b".repeat(20),
      hex(utf8.encode("Hi There")),
      "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
    ],
    [
      hex(utf8.encode("Jefe")),
      hex(utf8.encode("what do ya want for nothing?")),
      "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    ],
    [
      "0102030405060708090a0b0c0d0e0f10111213141516171819",
      "cd".repeat(50),
      "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
    ],
    [
      "aa".repeat(131),
      hex(utf8.encode("Test Using Larger Than Block-Size Key - Hash Key First")),
      "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
    ],
    [
      "aa".repeat(131),
      hex(
        utf8.encode(
          "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.",
        ),
      ),
      "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
    ],
  ];
  for (const [key, data, mac] of cases) {
    assert.equal(hex(hmacSha256(fromHex(key), fromHex(data))), mac);
  }
});

Deno.test("hmacSha256: the same as WebCrypto's for any key and message, in any parts", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.uint8Array({ minLength: 1, maxLength: 200 }),
      fc.uint8Array({ maxLength: 300 }),
      fc.nat(300),
      async (key, message, cut) => {
        const at = cut % (message.length + 1);
        const webKey = await crypto.subtle.importKey(
          "raw",
          key,
          { name: "HMAC", hash: "SHA-256" },
          false,
          ["sign"],
        );
        const expected = new Uint8Array(await crypto.subtle.sign("HMAC", webKey, message));
        assert.deepEqual(hmacSha256(key, message.subarray(0, at), message.subarray(at)), expected);
      },
    ),
    { numRuns: 200 },
  );
});
