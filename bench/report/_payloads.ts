// The report's payloads: the codec benchmarks' structured data (bench/_codec_payloads.ts)
// scaled from 1 KB to 10 MB, the same objects for every codec. The raw codec and raw frames
// carry the payload's compact JSON bytes. MB/s figures count those JSON bytes.

import { type BenchBatch, benchBatch, type BenchCall, benchPayloads } from "../_codec_payloads.ts";
import type { CodecName } from "./_bench_api.ts";
import { OP_SINK } from "./children/raw_frame_echo.ts";

/** One payload in every form the approaches send it. */
export interface ReportPayload {
  /** `small`, `1KB`, `10KB`, `100KB`, `1MB` or `10MB`. */
  name: string;
  value: BenchCall | BenchBatch;
  /** The compact JSON of `value`: what raw codecs and raw frames carry. */
  json: Uint8Array;
}

/** Every payload name, smallest first. */
export const PAYLOAD_NAMES = ["small", "1KB", "10KB", "100KB", "1MB", "10MB"] as const;

const utf8 = new TextEncoder();

/** The payloads named, in the order given. */
export function reportPayloads(names: readonly string[]): ReportPayload[] {
  const known = new Map(benchPayloads().map((payload) => [payload.name, payload.value]));
  if (names.includes("10MB")) known.set("10MB", benchBatch(10_000_000));
  return names.map((name) => {
    const value = known.get(name);
    if (value === undefined) throw new RangeError(`Unknown payload "${name}"`);
    return { name, value, json: utf8.encode(JSON.stringify(value)) };
  });
}

/** What `codec` is given for `payload`. */
export function valueFor(codec: CodecName | "raw-frames", payload: ReportPayload): unknown {
  return codec === "raw" || codec === "raw-frames" ? payload.json : payload.value;
}

/**
 * The 64-byte one-way message of the raw codec and of raw frames (its first byte tells the
 * raw-frame peer to count it).
 */
export function rawNote(): Uint8Array {
  const note = new Uint8Array(64).fill(0x61);
  note[0] = OP_SINK;
  return note;
}
