// Helpers shared by the codec tests.

import assert from "node:assert/strict";
import fc from "fast-check";
import { CodecError } from "../errors.ts";
import {
  type Shape,
  ShapeDecoder,
  ShapeEncoder,
  type ShapeLimits,
  structuredCodec,
} from "./structured.ts";

/** Runs `fn` and returns what it threw; fails the test if it returned. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  assert.fail("expected a throw");
}

/** An object that contains itself. */
export function cyclic(): unknown {
  const node: { self?: unknown } = {};
  node.self = node;
  return node;
}

/**
 * The value with every -0 replaced by 0 (JSON and MessagePack write -0 as 0). Keys such as
 * `__proto__` are copied as own data properties.
 */
export function withoutNegativeZero(value: unknown): unknown {
  if (Object.is(value, -0)) return 0;
  if (Array.isArray(value)) return value.map(withoutNegativeZero);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      Object.defineProperty(out, k, {
        value: withoutNegativeZero(v),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

/** A leaf of any kind the structured codec keeps (property tests nest them). */
export function structuredLeaf(): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constant(undefined),
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.string({ unit: "binary" }),
    fc.bigInt(),
    fc.date({ noInvalidDate: false }),
    fc.uint8Array({ maxLength: 16 }),
    fc.float64Array({ maxLength: 4 }).map((a) => new Float64Array(a)),
    fc.int16Array({ maxLength: 4 }),
    fc.bigInt64Array({ maxLength: 3 }),
  );
}

/** Asserts that `fn` throws the Arrow codec's decode `CodecError`, its message matching `pattern`. */
export function assertDecodeError(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof CodecError, `expected CodecError, got ${err}`);
    assert.equal(err.codec, "arrow");
    assert.equal(err.operation, "decode");
    assert.match(err.message, pattern);
    return true;
  });
}

const shapingCodec = structuredCodec();

/** One direction of a channel: a body is sent (its new shapes defined first) or dropped. */
export class Direction {
  readonly encoder: ShapeEncoder;
  readonly decoder: ShapeDecoder;
  defined = 0;

  constructor(limits: Partial<ShapeLimits> = {}) {
    this.encoder = new ShapeEncoder(limits);
    this.decoder = new ShapeDecoder(limits);
  }

  encode(value: unknown): { bytes: Uint8Array; shapes: readonly Shape[] } {
    const bytes = shapingCodec.encodeShaped(value, this.encoder).slice();
    return { bytes, shapes: this.encoder.uncommitted().slice() };
  }

  /** Writes the body's definitions (those not written yet), then decodes the body. */
  deliver(body: { bytes: Uint8Array; shapes: readonly Shape[] }): unknown {
    for (const shape of body.shapes) {
      if (this.encoder.commit(shape)) {
        this.decoder.define(shape.id, shape.keys);
        this.defined++;
      }
    }
    return shapingCodec.decodeShaped(body.bytes, this.decoder);
  }

  send(value: unknown): { bytes: Uint8Array; value: unknown } {
    const body = this.encode(value);
    return { bytes: body.bytes, value: this.deliver(body) };
  }
}
