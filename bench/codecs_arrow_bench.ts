// Arrow codec against JSON on the same rows: 1K / 100K / 1M rows × 5 columns (int32, float64,
// dictionary-encoded utf8, millisecond timestamp, bool). JSON carries the rows as an array of
// objects, the way an application would send them without Arrow.
//
// Arrow's decode is lazy (columns are views over the input), so "round trip" alone flatters it;
// "round trip + read all" also touches every value, which is the fair comparison with
// JSON.parse, and "from row objects" includes building the table from the same row objects.
//
//   deno bench -A bench/codecs_arrow_bench.ts

import {
  Bool,
  Float64,
  Int32,
  type Table,
  TimestampMillisecond,
  vectorFromArray,
} from "apache-arrow";
import {
  ArrowBatchDecoder,
  ArrowBatchEncoder,
  arrowCodec,
  tableFromColumns,
  tableFromRows,
} from "../codecs/arrow.ts";
import { jsonCodec } from "../codecs/json.ts";

/** One row. */
interface Row {
  id: number;
  value: number;
  tag: string;
  at: number;
  flag: boolean;
}

const TAGS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"];
/** The first row's timestamp; row `i` is `i` seconds later. */
const START: number = Date.UTC(2024, 0, 1);

/** `count` deterministic rows. */
function makeRows(count: number): Row[] {
  return Array.from({ length: count }, (_, i) => ({
    id: i,
    value: i * 1.25 + 0.5,
    tag: TAGS[(i * 7) % TAGS.length],
    at: START + i * 1000,
    flag: i % 3 === 0,
  }));
}

/** The same rows as an Arrow table. */
function makeTable(rows: readonly Row[]): Table {
  return tableFromColumns({
    id: Int32Array.from(rows, (r) => r.id),
    value: Float64Array.from(rows, (r) => r.value),
    tag: rows.map((r) => r.tag),
    at: vectorFromArray(rows.map((r) => r.at), new TimestampMillisecond()),
    flag: vectorFromArray(rows.map((r) => r.flag), new Bool()),
  });
}

const TYPES = { id: new Int32(), value: new Float64(), at: new TimestampMillisecond() };

const arrow = arrowCodec();
const json = jsonCodec<Row[]>();

// Touches every value of every column, as a consumer of the decoded data would.
function readAll(table: Table): number {
  let acc = 0;
  for (const v of table.getChild("id")!) acc += v as number;
  for (const v of table.getChild("value")!) acc += v as number;
  for (const v of table.getChild("tag")!) acc += (v as string).length;
  for (const v of table.getChild("at")!) acc += (v as number) > START ? 1 : 0;
  for (const v of table.getChild("flag")!) acc += v ? 1 : 0;
  return acc;
}

function readAllRows(rows: readonly Row[]): number {
  let acc = 0;
  for (const r of rows) {
    acc += r.id + r.value + r.tag.length + (r.at > START ? 1 : 0) + (r.flag ? 1 : 0);
  }
  return acc;
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(2)} MB`;

for (const [label, count] of [["1K", 1_000], ["100K", 100_000], ["1M", 1_000_000]] as const) {
  const rows = makeRows(count);
  const table = makeTable(rows);
  const arrowBytes = arrow.encode(table);
  const jsonBytes = json.encode(rows);
  console.log(
    `${label} rows × 5 columns: arrow ${mb(arrowBytes.length)}, json ${mb(jsonBytes.length)} ` +
      `(arrow is ${(100 * arrowBytes.length / jsonBytes.length).toFixed(0)}% of json)`,
  );
  // Cases that take 0.1–2 s per iteration get a fixed, small sample count; the rest run as
  // long as deno bench likes.
  const few = count >= 1_000_000
    ? { n: 5, warmup: 1 }
    : count >= 100_000
    ? { n: 20, warmup: 2 }
    : {};
  const group = `codec arrow vs json ${label} rows`;
  const bench = (name: string, fn: () => void, options: { slow?: boolean; baseline?: boolean }) =>
    Deno.bench({
      name,
      group,
      baseline: options.baseline ?? false,
      ...(options.slow ? few : {}),
      fn,
    });
  // Frames inside a chunk start 4 bytes in (the length prefix), so bodies are misaligned.
  const misaligned = new Uint8Array(arrowBytes.length + 4).subarray(4);
  misaligned.set(arrowBytes);

  bench(`codec/json ${label} rows round trip`, () => {
    json.decode(json.encode(rows));
  }, { slow: true, baseline: true });
  bench(`codec/json ${label} rows round trip + read all`, () => {
    readAllRows(json.decode(json.encode(rows)));
  }, { slow: true });
  bench(`codec/json ${label} rows decode`, () => {
    json.decode(jsonBytes);
  }, { slow: true });
  bench(`codec/arrow ${label} rows round trip`, () => {
    arrow.decode(arrow.encode(table));
  }, {});
  bench(`codec/arrow ${label} rows round trip + read all`, () => {
    readAll(arrow.decode(arrow.encode(table)));
  }, { slow: true });
  bench(`codec/arrow ${label} rows from row objects + round trip + read all`, () => {
    readAll(arrow.decode(arrow.encode(tableFromRows(rows, { types: TYPES }))));
  }, { slow: true });
  bench(`codec/arrow ${label} rows encode`, () => {
    arrow.encode(table);
  }, {});
  bench(`codec/arrow ${label} rows decode`, () => {
    arrow.decode(arrowBytes);
  }, {});
  bench(`codec/arrow ${label} rows decode, input at byteOffset 4`, () => {
    arrow.decode(misaligned);
  }, {});
}

// The batch-stream mode: 100 messages of 1K rows each, schema sent once.
{
  const batches = makeTable(makeRows(100_000)).batches[0];
  const slices = Array.from({ length: 100 }, (_, i) => batches.slice(i * 1000, (i + 1) * 1000));
  Deno.bench({
    name: "codec/arrow batch stream 100 × 1K rows round trip",
    group: "codec arrow vs json 100K rows",
    n: 20,
    warmup: 2,
    fn: () => {
      const encoder = new ArrowBatchEncoder();
      const decoder = new ArrowBatchDecoder();
      for (const slice of slices) decoder.decode(encoder.encode(slice));
      decoder.decode(encoder.end());
    },
  });
}
