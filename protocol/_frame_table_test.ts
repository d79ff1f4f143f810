// bodyStart() and readFrame() over a frame read split at its body (FrameDecoder's splitHead).

import assert from "node:assert/strict";
import fc from "fast-check";
import { bodyStart, FrameParser, type FrameSink, readFrame } from "./_frame_table.ts";
import { encodeEnvelope, type Envelope } from "./envelope.ts";
import { ProtocolError } from "./format.ts";
import { envelopeArbs } from "./_test_envelopes.ts";

const arbs = envelopeArbs(fc.uint8Array({ minLength: 1, maxLength: 40 }));
/** The data kinds, whose body a large frame's tail may be. */
const dataEnvelope: fc.Arbitrary<Envelope> = fc.oneof(
  arbs.call,
  arbs.notify,
  arbs.result,
  arbs.data,
);
/** Kinds that are never split: no body, or one that is an error's or a cancel's. */
const otherEnvelope: fc.Arbitrary<Envelope> = fc.oneof(
  arbs.hello,
  arbs.ping,
  arbs.error,
  arbs.cancel,
  arbs.end,
);

/** A sink that records each call with its arguments, bodies copied. */
function recordingSink(): { sink: FrameSink; calls: unknown[][] } {
  const calls: unknown[][] = [];
  const sink = new Proxy({}, {
    get: (_, name) => (...args: unknown[]) =>
      void calls.push([name, ...args.map((a) => a instanceof Uint8Array ? [...a] : a)]),
  }) as FrameSink;
  return { sink, calls };
}

function read(frame: Uint8Array, tail?: Uint8Array): unknown[][] {
  const { sink, calls } = recordingSink();
  readFrame(frame, sink, new FrameParser(), tail);
  return calls;
}

Deno.test("bodyStart: a data frame's envelope length, once its first bytes hold the envelope", () => {
  fc.assert(
    fc.property(dataEnvelope, fc.nat(), (envelope, cut) => {
      const frame = encodeEnvelope(envelope);
      const end = frame.length - (envelope as { body: Uint8Array }).body.length;
      assert.equal(bodyStart(frame), end);
      const start = frame.subarray(0, cut % (frame.length + 1));
      assert.equal(bodyStart(start), start.length >= end ? end : undefined);
    }),
  );
});

Deno.test("bodyStart: other kinds are never split", () => {
  fc.assert(
    fc.property(otherEnvelope, (envelope) => {
      assert.equal(bodyStart(encodeEnvelope(envelope)), undefined);
    }),
  );
  assert.equal(bodyStart(new Uint8Array(0)), undefined);
});

Deno.test("readFrame: a frame read split at its body, or anywhere, reads as the whole frame", () => {
  fc.assert(
    fc.property(fc.oneof(dataEnvelope, otherEnvelope), fc.nat(), (envelope, cut) => {
      const frame = encodeEnvelope(envelope);
      const whole = read(frame);
      // Where the channel splits (the tail is then the body itself, not a copy)...
      const end = bodyStart(frame);
      if (end !== undefined) {
        const tail = frame.slice(end);
        const { sink, calls } = recordingSink();
        let received: unknown;
        const keep = new Proxy(sink, {
          get: (target, name) => (...args: unknown[]) => {
            received ??= args.find((a) => a instanceof Uint8Array);
            return (target as unknown as Record<string | symbol, (...a: unknown[]) => void>)
              [name](...args);
          },
        });
        readFrame(frame.subarray(0, end), keep, new FrameParser(), tail);
        assert.deepEqual(calls, whole);
        assert.equal(received, tail, "the body is the tail itself");
      }
      // ...and anywhere else (joined, then read as usual).
      const at = 1 + cut % frame.length;
      if (at < frame.length) {
        assert.deepEqual(read(frame.subarray(0, at), frame.slice(at)), whole);
      }
    }),
  );
});

Deno.test("readFrame: a stream item read split counts its whole length as its cost", () => {
  const frame = encodeEnvelope({ kind: "data", id: 3, receiverId: true, body: new Uint8Array(9) });
  const end = bodyStart(frame)!;
  const calls = read(frame.subarray(0, end), frame.slice(end));
  assert.deepEqual(calls[0].slice(0, 2), ["onResultItem", 3]);
  assert.equal(calls[0][3], frame.length);
});

Deno.test("readFrame: a malformed split frame still throws ProtocolError", () => {
  // A CALL whose method length is 0, split after its envelope.
  const frame = new Uint8Array([0x10, 1, 0, 0, 0, 7, 7]);
  assert.throws(
    () => readFrame(frame.subarray(0, 5), recordingSink().sink, new FrameParser(), frame.slice(5)),
    ProtocolError,
  );
});

Deno.test("readFrame: an AUTH after the handshake is named as such, not an unknown kind", () => {
  assert.throws(
    () => read(new Uint8Array([0x05, ...new Uint8Array(32)])),
    (error: unknown) =>
      error instanceof ProtocolError && /AUTH after the handshake/.test(error.message),
  );
});
