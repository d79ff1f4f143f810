// In-memory codec speed, in this process, with the very codec instances the channel uses:
// the reference the targets compare calls and notifications against.

import assert from "node:assert/strict";
import { type CodecName, methodCodecsFor } from "./_bench_api.ts";
import { type ReportPayload, valueFor } from "./_payloads.ts";
import { type Spread, spread } from "./_stats.ts";

/** One codec on one payload. MB/s count the payload's JSON bytes. */
export interface CodecSpeed {
  /** The encoded size, in bytes. */
  bytes: number;
  encodesPerSec: Spread;
  decodesPerSec: Spread;
  /** `decode(encode(value))` per second. */
  roundTripsPerSec: Spread;
  encodeMBps: Spread;
  roundTripMBps: Spread;
}

/** Measures every codec on every payload, `runs` times. */
export async function measureCodecSpeed(
  codecs: readonly CodecName[],
  payloads: readonly ReportPayload[],
  runs: number,
  budgetMs: number,
): Promise<Record<string, Record<string, CodecSpeed>>> {
  const result: Record<string, Record<string, CodecSpeed>> = {};
  for (const name of codecs) {
    const codecs = await methodCodecsFor(name);
    result[name] = {};
    for (const payload of payloads) {
      const codec = payload.name === "small" ? codecs.small : codecs.payload;
      const value = valueFor(name, payload);
      const bytes = codec.encode(value);
      // Every codec must carry the whole payload, or the comparison means nothing.
      assert.deepStrictEqual(codec.decode(bytes), value, `${name} ${payload.name}`);
      const encodes: number[] = [];
      const decodes: number[] = [];
      const roundTrips: number[] = [];
      for (let run = 0; run < runs; run++) {
        encodes.push(rate(() => codec.encode(value), budgetMs));
        decodes.push(rate(() => codec.decode(bytes), budgetMs));
        roundTrips.push(rate(() => codec.decode(codec.encode(value)), budgetMs));
      }
      const mb = payload.json.length / 1e6;
      result[name][payload.name] = {
        bytes: bytes.length,
        encodesPerSec: spread(encodes)!,
        decodesPerSec: spread(decodes)!,
        roundTripsPerSec: spread(roundTrips)!,
        encodeMBps: spread(encodes.map((r) => r * mb))!,
        roundTripMBps: spread(roundTrips.map((r) => r * mb))!,
      };
    }
  }
  return result;
}

/** Operations per second of `fn`, timed in batches for at least `budgetMs` and 2 calls. */
function rate(fn: () => unknown, budgetMs: number): number {
  fn(); // warm-up
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
