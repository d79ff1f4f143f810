import assert from "node:assert/strict";
import fc from "fast-check";
import { FrameDecoder } from "../framing/frame_decoder.ts";
import { decodeEnvelope, encodeEnvelope, type Envelope } from "./envelope.ts";
import { Cursor, readVarint, varintSize, writeVarint } from "./_frame_table.ts";
import { ProtocolError } from "./format.ts";
import { envelopeArbs } from "./_test_envelopes.ts";

interface Vector {
  name: string;
  hex: string;
  frame: Record<string, unknown> & {
    bodyHex?: string;
    body?: unknown;
    metaHex?: string;
    meta?: unknown;
  };
}
interface Vectors {
  protocolVersion: number;
  valid: Vector[];
  invalid: Array<{ name: string; error: string; hex: string }>;
  sequences: {
    cases: Array<{
      name: string;
      steps: Array<{ send?: string; frames?: string[]; expect?: { kind: string } }>;
    }>;
  };
}

const vectors: Vectors = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/protocol/vectors.json", import.meta.url)),
);

const fromHex = (hex: string) =>
  new Uint8Array(hex.match(/../g)?.map((byte) => parseInt(byte, 16)) ?? []);
const toHex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** The payload of the single frame `hex` holds, through the real frame decoder. */
function payloadOf(hex: string): Uint8Array {
  const decoder = new FrameDecoder();
  decoder.push(fromHex(hex));
  const payload = decoder.next();
  assert.ok(payload, "the vector holds a whole frame");
  assert.equal(decoder.next(), undefined, "the vector holds one frame");
  return payload;
}

function envelopeOf(vector: Vector): Envelope {
  const { bodyHex, body: _meaning, metaHex, meta: _metaMeaning, ...fields } = vector.frame;
  return {
    ...fields,
    ...(bodyHex !== undefined && { body: fromHex(bodyHex) }),
    ...(metaHex !== undefined && { meta: fromHex(metaHex) }),
  } as Envelope;
}

Deno.test("golden vectors cover every frame kind and R value", () => {
  const seen = new Set(
    vectors.valid.map(({ frame }) => `${frame.kind}/${frame.receiverId ?? "-"}`),
  );
  for (
    const key of [
      "hello/-",
      "goodbye/-",
      "ping/-",
      "pong/-",
      "call/-",
      "notify/-",
      "result/-",
      "error/true",
      "error/false",
      "cancel/true",
      "cancel/false",
      "data/true",
      "data/false",
      "end/true",
      "end/false",
      "credit/true",
      "credit/false",
    ]
  ) {
    assert.ok(seen.has(key), `a vector for ${key}`);
  }
  assert.equal(vectors.protocolVersion, 1);
});

for (const vector of vectors.valid) {
  Deno.test(`golden vector ${vector.name}: encodes to its bytes and decodes to its fields`, () => {
    const envelope = envelopeOf(vector);
    const payload = encodeEnvelope(envelope);
    assert.equal(toHex(payload), toHex(payloadOf(vector.hex)));
    assert.deepEqual(decodeEnvelope(payloadOf(vector.hex)), envelope);
    if (vector.frame.body !== undefined) {
      const text = new TextDecoder().decode(fromHex(vector.frame.bodyHex ?? ""));
      assert.deepEqual(JSON.parse(text), vector.frame.body);
    }
  });
}

for (const vector of vectors.invalid) {
  Deno.test(`golden invalid vector ${vector.name}: rejected as a protocol error`, () => {
    const hex = vector.hex;
    const payload = hex === "00000000" ? new Uint8Array(0) : payloadOf(hex);
    assert.throws(() => decodeEnvelope(payload), ProtocolError);
    // A varint vector must fail on its varint, not on something read before it.
    if (vector.name.startsWith("varint-")) {
      assert.throws(() => decodeEnvelope(payload), /varint/i);
    }
  });
}

Deno.test("sequence vectors: each send step holds the whole frames it lists", () => {
  for (const { name, steps } of vectors.sequences.cases) {
    for (const step of steps) {
      if (step.send === undefined) continue;
      const decoder = new FrameDecoder({ maxFrameBytes: 0xffff_ffff });
      decoder.push(fromHex(step.send));
      const frames: Uint8Array[] = [];
      for (let f = decoder.next(); f !== undefined; f = decoder.next()) frames.push(f);
      decoder.end();
      assert.equal(frames.length, step.frames?.length, `${name}: ${step.frames}`);
      frames.forEach((frame, i) => {
        const label = step.frames![i];
        if (label.startsWith("kind 0x")) assert.throws(() => decodeEnvelope(frame), ProtocolError);
        else assert.ok(label.startsWith(decodeEnvelope(frame).kind.toUpperCase()), label);
      });
    }
    assert.equal(steps[0].send !== undefined && steps[1].expect?.kind, "hello", name);
  }
});

Deno.test("the worked examples of docs/protocol.md match the encoder", async () => {
  const doc = await Deno.readTextFile(new URL("../docs/protocol.md", import.meta.url));
  const lines = doc.split("\n").filter((line) => /^(caller|handler) → /.test(line));
  assert.ok(lines.length >= 7);
  for (const line of lines) {
    const hex = line.replace(/^.*?→ \w+\s+/, "").split(/\s{2,}/).slice(0, 2).join("").replace(
      / /g,
      "",
    );
    const payload = payloadOf(hex);
    assert.equal(toHex(encodeEnvelope(decodeEnvelope(payload))), toHex(payload), line);
  }
});

Deno.test("varints round-trip, take the documented size, and are minimal", () => {
  fc.assert(fc.property(fc.maxSafeNat(), (value) => {
    const bytes = new Uint8Array(8);
    const end = writeVarint(bytes, 0, value);
    assert.equal(end, varintSize(value));
    const cursor = new Cursor();
    assert.equal(readVarint(bytes.subarray(0, end), 0, cursor), value);
    assert.equal(cursor.end, end);
  }));
  const cases: Array<[number, string]> = [
    [0, "00"],
    [127, "7f"],
    [128, "8001"],
    [300, "ac02"],
    [16384, "808001"],
    [2 ** 31, "8080808008"],
    [Number.MAX_SAFE_INTEGER, "ffffffffffffff0f"],
  ];
  for (const [value, hex] of cases) {
    const bytes = new Uint8Array(8);
    assert.equal(toHex(bytes.subarray(0, writeVarint(bytes, 0, value))), hex);
  }
});

Deno.test("every envelope round-trips through encode and decode", () => {
  const arbs = envelopeArbs(fc.uint8Array({ maxLength: 40 }));
  const envelope: fc.Arbitrary<Envelope> = fc.oneof(
    arbs.hello,
    arbs.ping,
    arbs.shape,
    arbs.call,
    arbs.notify,
    arbs.result,
    arbs.data,
    arbs.end,
    arbs.credit,
  );
  fc.assert(fc.property(envelope, (value) => {
    assert.deepEqual(decodeEnvelope(encodeEnvelope(value)), { ...value });
  }));
});

Deno.test("decodeEnvelope never throws anything but ProtocolError on random bytes", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 24 }), (bytes) => {
      try {
        decodeEnvelope(bytes);
      } catch (error) {
        assert.ok(error instanceof ProtocolError, String(error));
      }
    }),
    { numRuns: 5000 },
  );
});

Deno.test("SHAPE frames round-trip, and malformed ones are protocol errors naming the fault", () => {
  const shape: Envelope = { kind: "shape", id: 300, keys: ["id", "naïve", "", "__proto__"] };
  assert.deepEqual(decodeEnvelope(encodeEnvelope(shape)), shape);
  const cases: Array<[number[], RegExp]> = [
    [[0x06, 0, 200, 1, 0x61], /SHAPE 0 says 200 keys, more than its frame holds/],
    [[0x06, 0, 1, 5, 0x61], /SHAPE 0 key 0 of 5 bytes overruns the frame/],
    [[0x06, 0, 1, 1, 0xff], /SHAPE 0 key 0 is not valid UTF-8/],
    [[0x06, 0, 1, 1, 0x61, 0], /SHAPE\(R=0\) has 1 unexpected trailing byte/],
    [[0x06, 0x80], /SHAPE\(R=0\) field shape id/],
    [[0x86, 0, 1, 1, 0x61], /SHAPE\(R=1\): this kind does not allow the R flag/],
  ];
  for (const [bytes, message] of cases) {
    assert.throws(() => decodeEnvelope(new Uint8Array(bytes)), (error) => {
      assert.ok(error instanceof ProtocolError, String(error));
      assert.match(error.message, message);
      return true;
    });
  }
});
