// Random envelopes of every kind, for the protocol's property tests.

import fc from "fast-check";
import type { Envelope } from "./envelope.ts";

/** One arbitrary per envelope kind, the bodies drawn from `body`. */
export function envelopeArbs(
  body: fc.Arbitrary<Uint8Array>,
): { [K in Envelope["kind"]]: fc.Arbitrary<Extract<Envelope, { kind: K }>> } {
  const id = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });
  const method = fc.string({ minLength: 1, maxLength: 30, unit: "grapheme" }).filter((s) =>
    new TextEncoder().encode(s).length <= 1024
  );
  const receiverId = fc.boolean();
  return {
    hello: fc.record({ kind: fc.constant("hello" as const), body }),
    goodbye: fc.record({ kind: fc.constant("goodbye" as const), body }),
    ping: fc.record({ kind: fc.constant("ping" as const), nonce: fc.maxSafeNat() }),
    pong: fc.record({ kind: fc.constant("pong" as const), nonce: fc.maxSafeNat() }),
    shape: fc.record({
      kind: fc.constant("shape" as const),
      id: fc.maxSafeNat(),
      keys: fc.array(fc.string({ unit: "grapheme" }), { maxLength: 5 }),
    }),
    call: fc.oneof(
      fc.record({
        kind: fc.constant("call" as const),
        id,
        flags: fc.constant(0),
        timeoutMs: fc.maxSafeNat(),
        method,
        body,
      }),
      // With a meta (§6): its bytes after the method, behind flag bit 1.
      fc.record({
        kind: fc.constant("call" as const),
        id,
        flags: fc.constant(2),
        timeoutMs: fc.maxSafeNat(),
        method,
        body,
        meta: fc.uint8Array({ minLength: 1, maxLength: 300 }),
      }),
    ),
    notify: fc.record({ kind: fc.constant("notify" as const), method, body }),
    result: fc.record({ kind: fc.constant("result" as const), id, body }),
    error: fc.record({ kind: fc.constant("error" as const), id, receiverId, body }),
    cancel: fc.record({ kind: fc.constant("cancel" as const), id, receiverId, body }),
    data: fc.record({ kind: fc.constant("data" as const), id, receiverId, body }),
    end: fc.record({ kind: fc.constant("end" as const), id, receiverId }),
    credit: fc.record({
      kind: fc.constant("credit" as const),
      id,
      receiverId,
      bytes: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    }),
  };
}
