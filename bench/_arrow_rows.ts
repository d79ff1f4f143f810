// Rows for the Arrow benchmark (bench/codecs_arrow_bench.ts): five
// columns (int32, float64, dictionary-encoded utf8, millisecond timestamp, bool), sent as an
// Arrow table by the arrow codec and as an array of row objects by JSON.

import { Bool, type Table, TimestampMillisecond, vectorFromArray } from "apache-arrow";
import { tableFromColumns } from "../codecs/arrow.ts";

/** One row. */
export interface Row {
  id: number;
  value: number;
  tag: string;
  at: number;
  flag: boolean;
}

const TAGS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"];
/** The first row's timestamp; row `i` is `i` seconds later. */
export const START: number = Date.UTC(2024, 0, 1);

/** `count` deterministic rows. */
export function makeRows(count: number): Row[] {
  return Array.from({ length: count }, (_, i) => ({
    id: i,
    value: i * 1.25 + 0.5,
    tag: TAGS[(i * 7) % TAGS.length],
    at: START + i * 1000,
    flag: i % 3 === 0,
  }));
}

/** The same rows as an Arrow table. */
export function makeTable(rows: readonly Row[]): Table {
  return tableFromColumns({
    id: Int32Array.from(rows, (r) => r.id),
    value: Float64Array.from(rows, (r) => r.value),
    tag: rows.map((r) => r.tag),
    at: vectorFromArray(rows.map((r) => r.at), new TimestampMillisecond()),
    flag: vectorFromArray(rows.map((r) => r.flag), new Bool()),
  });
}
