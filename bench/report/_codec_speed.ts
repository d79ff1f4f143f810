// In-memory codec speed, in this process, with the very codec instances the channel uses:
// the reference the targets compare calls and notifications against. It is measured at the
// start of every run of the suite, so it sees the same machine load as the calls it is
// compared with.

import assert from "node:assert/strict";
import type { Codec } from "../../codecs/types.ts";
import { type CodecName, methodCodecsFor } from "./_bench_api.ts";
import { type ReportPayload, valueFor } from "./_payloads.ts";
import { type Spread, spread } from "./_stats.ts";

/** One codec on one payload, over the runs. MB/s count the payload's JSON bytes. */
export interface CodecSpeed {
  /** The encoded size, in bytes. */
  bytes: number;
  encodesPerSec: Spread;
  decodesPerSec: Spread;
  /** `decode(encode(value))` per second. */
  roundTripsPerSec: Spread;
  encodeMBps: Spread;
  roundTripMBps: Spread;
  /** Each run's figures, in run order, for ratios paired by run. */
  perRun: { encodesPerSec: number[]; roundTripMBps: number[] };
}

interface Rates {
  encode: number[];
  decode: number[];
  roundTrip: number[];
}

interface Entry {
  codec: Codec<unknown>;
  value: unknown;
  bytes: Uint8Array;
  jsonBytes: number;
  rates: Rates;
}

/** Measures codecs on payloads once per {@linkcode CodecSpeedMeter.run} call. */
export class CodecSpeedMeter {
  readonly #entries = new Map<string, Map<string, Entry>>();
  readonly #budgetMs: number;

  private constructor(budgetMs: number) {
    this.#budgetMs = budgetMs;
  }

  /** Prepares every codec × payload, checking that each codec carries each payload whole. */
  static async create(
    codecs: readonly CodecName[],
    payloads: readonly ReportPayload[],
    budgetMs: number,
  ): Promise<CodecSpeedMeter> {
    const meter = new CodecSpeedMeter(budgetMs);
    for (const name of codecs) {
      const set = await methodCodecsFor(name);
      const entries = new Map<string, Entry>();
      for (const payload of payloads) {
        const codec = payload.name === "small" ? set.small : set.payload;
        const value = valueFor(name, payload);
        const bytes = codec.encode(value);
        // Every codec must carry the whole payload, or the comparison means nothing.
        assert.deepStrictEqual(codec.decode(bytes), value, `${name} ${payload.name}`);
        entries.set(payload.name, {
          codec,
          value,
          bytes,
          jsonBytes: payload.json.length,
          rates: { encode: [], decode: [], roundTrip: [] },
        });
      }
      meter.#entries.set(name, entries);
    }
    return meter;
  }

  /** One run: encode, decode and round trip of every codec × payload. */
  run(): void {
    for (const entries of this.#entries.values()) {
      for (const { codec, value, bytes, rates } of entries.values()) {
        rates.encode.push(rate(() => codec.encode(value), this.#budgetMs));
        rates.decode.push(rate(() => codec.decode(bytes), this.#budgetMs));
        rates.roundTrip.push(rate(() => codec.decode(codec.encode(value)), this.#budgetMs));
      }
    }
  }

  /** codec → payload → speed over the runs so far. */
  results(): Record<string, Record<string, CodecSpeed>> {
    const result: Record<string, Record<string, CodecSpeed>> = {};
    for (const [name, entries] of this.#entries) {
      result[name] = {};
      for (const [payload, { bytes, jsonBytes, rates }] of entries) {
        const mb = jsonBytes / 1e6;
        result[name][payload] = {
          bytes: bytes.length,
          encodesPerSec: spread(rates.encode)!,
          decodesPerSec: spread(rates.decode)!,
          roundTripsPerSec: spread(rates.roundTrip)!,
          encodeMBps: spread(rates.encode.map((r) => r * mb))!,
          roundTripMBps: spread(rates.roundTrip.map((r) => r * mb))!,
          perRun: {
            encodesPerSec: [...rates.encode],
            roundTripMBps: rates.roundTrip.map((r) => r * mb),
          },
        };
      }
    }
    return result;
  }
}

/**
 * Operations per second of `fn`: a warm-up of a third of `budgetMs` (at least one call),
 * then calls in growing batches for `budgetMs` (at least two).
 */
function rate(fn: () => unknown, budgetMs: number): number {
  const warmUntil = performance.now() + budgetMs / 3;
  do fn(); while (performance.now() < warmUntil);
  let calls = 0;
  let batch = 1;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < budgetMs || calls < 2) {
    for (let i = 0; i < batch; i++) fn();
    calls += batch;
    elapsed = performance.now() - start;
    if (elapsed < budgetMs / 10) batch *= 2;
  }
  return calls / (elapsed / 1000);
}
