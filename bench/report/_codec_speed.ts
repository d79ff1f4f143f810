// In-memory codec speed with the very codec instances the channel uses: the reference the
// targets compare calls and notifications against. It is measured at the start of every run
// of the suite, so it sees the same machine load as the calls it is compared with, in fresh
// processes (this module run as a program) that hold one payload each. (In the harness
// process itself, whose heap holds every payload and result, a 1 MB JSON round trip measured
// about half as fast.)

import assert from "node:assert/strict";
import type { Codec } from "../../codecs/types.ts";
import { type CodecName, methodCodecsFor } from "./_bench_api.ts";
import { runFresh } from "./_measure.ts";
import { MSGPACKR_LOCK_FLAG } from "../_codec_payloads.ts";
import { reportPayloads, valueFor } from "./_payloads.ts";
import { type Spread, spread } from "./_stats.ts";

/**
 * Codecs of the table only (no channel rows): the structured codec, with a channel
 * direction's shape tables, against msgpackr's records and V8's serialization.
 */
export const TABLE_CODECS = [
  "structured",
  "structured+shapes",
  "msgpackr shared records",
  "v8",
] as const;

/** A codec of the table: a channel codec of the report, or one of {@linkcode TABLE_CODECS}. */
export type TableCodec = CodecName | typeof TABLE_CODECS[number];

/** One codec on one payload, over the runs. MB/s count the payload's JSON bytes. */
export interface CodecSpeed {
  /** The encoded size, in bytes. */
  bytes: number;
  encodesPerSec: Spread;
  decodesPerSec: Spread;
  /** `decode(encode(value))` per second. */
  roundTripsPerSec: Spread;
  roundTripMBps: Spread;
  /** Each run's figures, in run order, for ratios paired by run. */
  perRun: { encodesPerSec: number[]; roundTripMBps: number[] };
}

/** One run's rates: codec → payload → figures. */
export type CodecSpeedRun = Record<string, Record<string, CodecRates>>;

/** What one run measured for one codec on one payload. */
export interface CodecRates {
  bytes: number;
  jsonBytes: number;
  encodesPerSec: number;
  decodesPerSec: number;
  roundTripsPerSec: number;
}

/**
 * Measures every codec × payload once: each payload in a fresh process of its own, whose heap
 * holds that payload only (the codecs allocate, and a heap full of other payloads makes every
 * collection dearer).
 */
export async function measureCodecSpeed(
  codecs: readonly TableCodec[],
  payloads: readonly string[],
  budgetMs: number,
): Promise<CodecSpeedRun> {
  const result: CodecSpeedRun = {};
  for (const payload of payloads) {
    const run = await runFresh<CodecSpeedRun>(
      import.meta.filename!,
      [
        JSON.stringify({ codecs, payloads: [payload], budgetMs }),
      ],
      {},
      [MSGPACKR_LOCK_FLAG],
    );
    for (const [codec, byPayload] of Object.entries(run)) {
      Object.assign(result[codec] ??= {}, byPayload);
    }
  }
  return result;
}

/** codec → payload → speed over the runs. */
export function combineCodecRuns(runs: readonly CodecSpeedRun[]): Record<
  string,
  Record<string, CodecSpeed>
> {
  const result: Record<string, Record<string, CodecSpeed>> = {};
  if (runs.length === 0) return result;
  for (const [codec, byPayload] of Object.entries(runs[0])) {
    result[codec] = {};
    for (const [payload, first] of Object.entries(byPayload)) {
      const of = (figure: (rates: CodecRates) => number) =>
        runs.map((run) => figure(run[codec][payload]));
      const encodesPerSec = of((r) => r.encodesPerSec);
      const roundTripMBps = of((r) => r.roundTripsPerSec * first.jsonBytes / 1e6);
      result[codec][payload] = {
        bytes: first.bytes,
        encodesPerSec: spread(encodesPerSec)!,
        decodesPerSec: spread(of((r) => r.decodesPerSec))!,
        roundTripsPerSec: spread(of((r) => r.roundTripsPerSec))!,
        roundTripMBps: spread(roundTripMBps)!,
        perRun: { encodesPerSec, roundTripMBps },
      };
    }
  }
  return result;
}

if (import.meta.main) {
  const task: { codecs: TableCodec[]; payloads: string[]; budgetMs: number } = JSON.parse(
    Deno.args[0],
  );
  const payloads = reportPayloads(task.payloads);
  const result: CodecSpeedRun = {};
  for (const name of task.codecs) {
    const table = await tableCodec(name);
    const set = table === undefined ? await methodCodecsFor(name as CodecName) : undefined;
    result[name] = {};
    for (const payload of payloads) {
      const codec = table?.() ?? (payload.name === "small" ? set!.small : set!.payload);
      const value = valueFor(table === undefined ? name as CodecName : "msgpack", payload);
      // The first message defines shapes (structures): the figures are those of the next ones.
      codec.encode(value);
      const bytes = codec.encode(value);
      // Every codec must carry the whole payload, or the comparison means nothing.
      assert.deepStrictEqual(codec.decode(bytes), value, `${name} ${payload.name}`);
      result[name][payload.name] = {
        bytes: bytes.length,
        jsonBytes: payload.json.length,
        encodesPerSec: rate(() => codec.encode(value), task.budgetMs),
        decodesPerSec: rate(() => codec.decode(bytes), task.budgetMs),
        roundTripsPerSec: rate(() => codec.decode(codec.encode(value)), task.budgetMs),
      };
    }
  }
  console.log(JSON.stringify(result));
}

/** The factory of a table-only codec, or undefined for a channel codec of the report. */
async function tableCodec(name: TableCodec): Promise<(() => Codec<unknown>) | undefined> {
  const compared = await import("../_codec_payloads.ts");
  switch (name) {
    case "structured": {
      const { structuredCodec } = await import("../../codecs/structured.ts");
      return () => structuredCodec();
    }
    case "structured+shapes":
      return compared.shapedStructuredCodec;
    case "msgpackr shared records": {
      const msgpackrCodec = await compared.loadMsgpackr();
      return () => msgpackrCodec(true);
    }
    case "v8":
      return compared.v8Codec;
    default:
      return undefined;
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
