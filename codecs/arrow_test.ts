import assert from "node:assert/strict";
import fc from "fast-check";
import {
  Binary,
  Bool,
  type Data,
  type DataType,
  Field,
  Float64,
  Int32,
  Int64,
  List,
  makeData,
  makeVector,
  Message,
  MessageHeader,
  RecordBatch,
  Schema,
  Table,
  tableFromIPC,
  tableToIPC,
  Timestamp,
  TimestampMillisecond,
  TimeUnit,
  Utf8,
  Vector,
  vectorFromArray,
} from "apache-arrow";
import { CodecError } from "../errors.ts";
import { codecConformance } from "./_conformance.ts";
import { thrown } from "./_test_util.ts";
import {
  ArrowBatchDecoder,
  ArrowBatchEncoder,
  arrowCodec,
  arrowRecordBatchCodec,
  DEFAULT_ARROW_MAX_DEPTH,
  tableFromColumns,
  tableFromRows,
} from "./arrow.ts";
import { concat } from "../framing/_test_util.ts";
import { assertDecodeError } from "./_test_util.ts";

const codec = arrowCodec();
const INTEROP_SCRIPT = new URL("../testdata/arrow/arrow_interop.py", import.meta.url);
const PYARROW_FIXTURE = new URL("../testdata/arrow/pyarrow_shared.arrows", import.meta.url);

// --- fixtures -------------------------------------------------------------------------------

const BIG = 2n ** 62n + 7n;

/** The table the pyarrow script also builds: nulls, dictionary strings, timestamps, int64,
 * nested lists. Kept in step with EXPECTED in testdata/arrow/arrow_interop.py. */
function sharedTable(): Table {
  return tableFromColumns({
    id: vectorFromArray([1, 2, 3, null], new Int32()),
    big: vectorFromArray([BIG, -BIG, 0n, null], new Int64()),
    tag: ["alpha", "beta", null, "alpha"],
    at_ms: vectorFromArray([0, 1_700_000_000_123, null, -1], new TimestampMillisecond()),
    at_us_utc: makeVector(makeData({
      type: new Timestamp(TimeUnit.MICROSECOND, "UTC"),
      length: 4,
      nullCount: 1,
      nullBitmap: Uint8Array.of(0b1101),
      data: BigInt64Array.of(1_700_000_000_123_456n, 0n, 0n, 42n),
    })),
    nested: vectorFromArray(
      [[[1, 2], [3]], null, [[], null, [4]], []],
      listOf(listOf(new Int32())),
    ),
    score: vectorFromArray([0.5, null, Infinity, -0], new Float64()),
  });
}

function listOf(type: DataType): List {
  return new List(new Field("item", type, true));
}

/** apache-arrow's own Schema constructor recurses over field types, so it cannot build a
 * schema nested 100 000 deep; deeper requests are capped here (still far past maxDepth). */
const NESTING_BUILDABLE = 2_000;

/** A table whose single column is `depth` lists around an Int32, built without recursion. */
function nestedTable(depth: number): Table {
  depth = Math.min(depth, NESTING_BUILDABLE);
  let type: DataType = new Int32();
  let data: Data = makeData({ type: new Int32(), length: 1, nullCount: 0, data: Int32Array.of(7) });
  for (let i = 0; i < depth; i++) {
    type = listOf(type);
    data = makeData({
      type: type as List,
      length: 1,
      nullCount: 0,
      valueOffsets: Int32Array.of(0, 1),
      child: data,
    });
  }
  return tableFromColumns({ v: makeVector(data) });
}

/** Converts Arrow values (vectors, struct rows) to plain JS values for deep comparison. */
function plain(value: unknown): unknown {
  if (value instanceof Vector) return [...value].map(plain);
  if (value instanceof Uint8Array || value === null || typeof value !== "object") return value;
  const json = (value as { toJSON?: () => Record<string, unknown> }).toJSON?.();
  if (json === undefined) return value;
  return Object.fromEntries(Object.entries(json).map(([k, v]) => [k, plain(v)]));
}

/** Reads up to 1000 values of a vector and of each nested vector in it. */
function readSome(value: unknown): void {
  if (value instanceof Vector) {
    for (let i = 0; i < Math.min(value.length, 1000); i++) readSome(value.get(i));
  } else if (value !== null && typeof value === "object" && "toJSON" in value) {
    for (const v of Object.values((value as { toJSON: () => object }).toJSON())) readSome(v);
  }
}

function assertTablesEqual(actual: Table, expected: Table): void {
  const shape = (t: Table) =>
    t.schema.fields.map((f) => `${f.name}: ${f.type} nullable=${f.nullable}`);
  assert.deepStrictEqual(shape(actual), shape(expected));
  assert.deepStrictEqual(actual.schema.metadata, expected.schema.metadata);
  assert.equal(actual.numRows, expected.numRows);
  for (let i = 0; i < expected.numCols; i++) {
    assert.deepStrictEqual(plain(actual.getChildAt(i)), plain(expected.getChildAt(i)));
  }
}

/** The header type of every message in an IPC stream, read with apache-arrow's parser. */
function messageTypes(bytes: Uint8Array): string[] {
  return messages(bytes).map((m) => m.type);
}

function messages(bytes: Uint8Array): Array<{ type: string; start: number; end: number }> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = [];
  let pos = 0;
  while (pos + 8 <= bytes.length) {
    const length = view.getInt32(pos + 4, true);
    if (length === 0) {
      out.push({ type: "EOS", start: pos, end: pos + 8 });
      pos += 8;
      continue;
    }
    const message = Message.decode(bytes.subarray(pos + 8, pos + 8 + length));
    const end = pos + 8 + length + message.bodyLength;
    out.push({ type: MessageHeader[message.headerType], start: pos, end });
    pos = end;
  }
  return out;
}

// --- conformance ----------------------------------------------------------------------------

const mixed = sharedTable();
const [mixedBatch] = mixed.batches;

codecConformance<Table>({
  codec,
  samples: [
    { name: "mixed columns", value: mixed },
    { name: "one int32 column", value: tableFromColumns({ n: Int32Array.of(1, -2, 3) }) },
    {
      name: "two batches sharing a dictionary",
      value: new Table([mixedBatch.slice(0, 2), mixedBatch.slice(2, 4)]),
    },
    {
      name: "structs and booleans from rows",
      value: tableFromRows([
        { flag: true, point: { x: 1, y: 2 } },
        { flag: null, point: { x: 3, y: null } },
        { flag: false },
      ]),
    },
    {
      name: "schema metadata",
      value: new Table(
        new Schema([new Field("n", new Int32(), false)], new Map([["origin", "test"]])),
        tableFromColumns({ n: Int32Array.of(5) }).batches.map((b) =>
          new RecordBatch(
            new Schema([new Field("n", new Int32(), false)], new Map([["origin", "test"]])),
            b.data,
          )
        ),
      ),
    },
  ],
  equal: assertTablesEqual,
  empty: [
    new Table(),
    tableFromColumns({ n: Int32Array.of() }),
    new Table(new Schema([new Field("s", new Utf8(), true)])),
  ],
  nested: nestedTable,
  maxDepth: DEFAULT_ARROW_MAX_DEPTH,
  unicode: (text) =>
    tableFromColumns({ dictionary: [text], plain: vectorFromArray([text], new Utf8()) }),
  binary: (bytes) => tableFromColumns({ b: vectorFromArray([bytes, null], new Binary()) }),
  large: () => {
    const values = new Float64Array(2 * 1024 * 1024);
    for (let i = 0; i < values.length; i++) values[i] = i * 0.5;
    return tableFromColumns({ x: values });
  },
  arbitrary: fc.array(
    fc.record({
      i: fc.option(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })),
      f: fc.option(fc.double()),
      s: fc.option(fc.string({ unit: "grapheme" })),
      b: fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })),
      l: fc.option(fc.array(fc.option(fc.integer({ min: -1000, max: 1000 })), { maxLength: 4 })),
      flag: fc.option(fc.boolean()),
    }),
    { maxLength: 24 },
  ).map((rows) =>
    tableFromColumns(
      {
        i: rows.map((r) => r.i),
        f: rows.map((r) => r.f),
        s: rows.map((r) => r.s),
        b: rows.map((r) => r.b),
        l: rows.map((r) => r.l),
        flag: rows.map((r) => r.flag),
      },
      {
        types: {
          i: new Int32(),
          f: new Float64(),
          b: new Int64(),
          l: listOf(new Int32()),
          flag: new Bool(),
        },
      },
    )
  ),
  unencodable: [
    { name: "null", value: null },
    { name: "a plain object", value: { numRows: 0, schema: {}, batches: [] } },
    { name: "a record batch", value: mixedBatch },
    { name: "bytes", value: new Uint8Array(8) },
  ],
  undecodable: [
    { name: "empty input", bytes: new Uint8Array(0) },
    { name: "end-of-stream marker only", bytes: Uint8Array.of(255, 255, 255, 255, 0, 0, 0, 0) },
    { name: "schema without end marker", bytes: codec.encode(new Table()).subarray(0, -8) },
    { name: "trailing byte", bytes: concat([codec.encode(mixed), Uint8Array.of(0)]) },
    { name: "two streams", bytes: concat([codec.encode(mixed), codec.encode(mixed)]) },
    { name: "Arrow file format", bytes: tableToIPC(mixed, "file") },
    { name: "JSON text", bytes: new TextEncoder().encode('{"a":[1,2,3]}') },
  ],
  runs: 200,
});

codecConformance<RecordBatch>({
  codec: arrowRecordBatchCodec(),
  label: "arrow-record-batch",
  samples: [
    { name: "mixed columns", value: mixedBatch },
    { name: "a slice", value: mixedBatch.slice(1, 3) },
  ],
  equal: (actual, expected) => assertTablesEqual(new Table(actual), new Table(expected)),
  empty: [new RecordBatch(new Schema([new Field("n", new Int32(), true)]), undefined)],
  unencodable: [
    { name: "a table", value: mixed },
    { name: "undefined", value: undefined },
  ],
  undecodable: [
    { name: "two batches", bytes: codec.encode(new Table([mixedBatch, mixedBatch])) },
    { name: "empty input", bytes: new Uint8Array(0) },
  ],
  runs: 100,
});

// --- values ---------------------------------------------------------------------------------

Deno.test("codec/arrow: nulls, dictionaries, timestamps, int64 and nested lists survive", () => {
  const decoded = codec.decode(codec.encode(sharedTable()));
  assert.deepStrictEqual(decoded.schema.fields.map((f) => `${f.name}: ${f.type}`), [
    "id: Int32",
    "big: Int64",
    "tag: Dictionary<Int32, Utf8>",
    "at_ms: Timestamp<MILLISECOND>",
    "at_us_utc: Timestamp<MICROSECOND, UTC>",
    "nested: List<List<Int32>>",
    "score: Float64",
  ]);
  assert.deepStrictEqual(plain(decoded.getChild("id")), [1, 2, 3, null]);
  assert.deepStrictEqual(plain(decoded.getChild("big")), [BIG, -BIG, 0n, null]);
  assert.deepStrictEqual(plain(decoded.getChild("tag")), ["alpha", "beta", null, "alpha"]);
  // The dictionary holds each distinct string once; rows hold indices.
  const tag = decoded.getChild("tag")!.data[0];
  assert.deepStrictEqual([...tag.dictionary!], ["alpha", "beta"]);
  assert.deepStrictEqual([...(tag.values as Int32Array)].filter((_, i) => i !== 2), [0, 1, 0]);
  assert.deepStrictEqual(plain(decoded.getChild("at_ms")), [0, 1_700_000_000_123, null, -1]);
  const micros = decoded.getChild("at_us_utc")!;
  assert.deepStrictEqual(
    [...(micros.data[0].values as BigInt64Array)].filter((_, i) => micros.isValid(i)),
    [1_700_000_000_123_456n, 0n, 42n],
  );
  assert.equal(micros.isValid(1), false);
  assert.deepStrictEqual(plain(decoded.getChild("nested")), [
    [[1, 2], [3]],
    null,
    [[], null, [4]],
    [],
  ]);
  assert.ok(Object.is(decoded.getChild("score")!.get(3), -0));
});

Deno.test("codec/arrow: tableFromColumns and tableFromRows infer the documented types", () => {
  const table = tableFromColumns({
    i32: Int32Array.of(1),
    num: [1.5],
    big: [1n],
    str: ["s"],
    bool: [true],
    date: [new Date(0)],
    list: [[1]],
    obj: [{ a: 1 }],
  });
  assert.deepStrictEqual(table.schema.fields.map((f) => `${f.type}`), [
    "Int32",
    "Float64",
    "Int64",
    "Dictionary<Int32, Utf8>",
    "Bool",
    "Timestamp<MILLISECOND>",
    "List<Float64>",
    "Struct<{a:Float64}>",
  ]);
  const column = Int32Array.of(4, 5);
  const fromTyped = tableFromColumns({ c: column });
  assert.equal(fromTyped.getChild("c")!.data[0].values.buffer, column.buffer, "no copy");

  const rows = tableFromRows([{ a: 1, b: "x" }, { b: "y", c: true }, {}]);
  assert.deepStrictEqual(rows.schema.names, ["a", "b", "c"]);
  assert.deepStrictEqual(plain(rows.getChild("a")), [1, null, null]);
  assert.deepStrictEqual(plain(rows.getChild("c")), [null, true, null]);
  const typed = tableFromRows([{ a: 1 }, { a: 2 }], { types: { a: new Int32() } });
  assert.equal(String(typed.schema.fields[0].type), "Int32");

  assert.throws(() => tableFromColumns({ a: [1, 2], b: [1] }), /column "b" has 1 values/);
  assert.throws(() => tableFromRows([{ a: 1 }, { a: "x" }]), TypeError);
});

// --- zero copy ------------------------------------------------------------------------------

Deno.test("codec/arrow: decoded columns are views over the input bytes", () => {
  const input = codec.encode(sharedTable());
  const decoded = codec.decode(input);
  const inside = (view: ArrayBufferView) => {
    assert.equal(view.buffer, input.buffer);
    assert.ok(view.byteOffset >= input.byteOffset);
    assert.ok(view.byteOffset + view.byteLength <= input.byteOffset + input.byteLength);
  };
  const id = decoded.getChild("id")!.data[0];
  inside(id.values);
  inside(id.nullBitmap!);
  inside(decoded.getChild("big")!.data[0].values);
  const tag = decoded.getChild("tag")!.data[0];
  inside(tag.values);
  inside(tag.dictionary!.data[0].values);
  inside(decoded.getChild("nested")!.data[0].children[0].children[0].values);

  // A view, not a copy: changing the input changes the table.
  const values = id.values as Int32Array;
  values[0] = 99;
  assert.equal(decoded.getChild("id")!.get(0), 99);
  assert.equal(input[values.byteOffset - input.byteOffset], 99);
});

Deno.test("codec/arrow: misaligned input and copy: true give tables independent of input", () => {
  const encoded = codec.encode(sharedTable());
  const backing = new Uint8Array(encoded.length + 4);
  backing.set(encoded, 4);
  const misaligned = backing.subarray(4);
  const fromMisaligned = codec.decode(misaligned);
  assertTablesEqual(fromMisaligned, sharedTable());
  assert.notEqual(fromMisaligned.getChild("big")!.data[0].values.buffer, backing.buffer);

  const copied = arrowCodec({ copy: true }).decode(encoded);
  assert.notEqual(copied.getChild("id")!.data[0].values.buffer, encoded.buffer);
  encoded.fill(0);
  assertTablesEqual(copied, sharedTable());
});

// --- malformed input ------------------------------------------------------------------------

Deno.test("codec/arrow: a stream cut at a message boundary is an error, not a shorter table", () => {
  const table = new Table([mixedBatch.slice(0, 2), mixedBatch.slice(2, 4)]);
  const bytes = codec.encode(table);
  const boundaries = messages(bytes);
  assert.deepStrictEqual(boundaries.map((m) => m.type), [
    "Schema",
    "DictionaryBatch",
    "RecordBatch",
    "RecordBatch",
    "EOS",
  ]);
  for (const { start } of boundaries) {
    assertDecodeError(() => codec.decode(bytes.subarray(0, start)), /end-of-stream marker/);
  }
  // What this guards against: apache-arrow alone reads the same prefix as a shorter table.
  const lastBatch = boundaries[3].start;
  assert.equal(tableFromIPC(bytes.subarray(0, lastBatch)).numRows, 2);
  // A cut inside a body names the missing bytes.
  const body = boundaries[2].end - 3;
  assertDecodeError(() => codec.decode(bytes.subarray(0, body)), /body but \d+ bytes remain/);
});

Deno.test("codec/arrow: a record batch whose dictionary never came is an error", () => {
  const bytes = codec.encode(sharedTable());
  const dictionary = messages(bytes).find((m) => m.type === "DictionaryBatch")!;
  const without = concat([bytes.subarray(0, dictionary.start), bytes.subarray(dictionary.end)]);
  assertDecodeError(() => codec.decode(without), /record batch arrived before its dictionary/);
});

Deno.test("codec/arrow: corrupt header lengths are rejected before apache-arrow loops on them", () => {
  const bytes = codec.encode(tableFromColumns({ n: Int32Array.of(1, 2) }));
  const batch = messages(bytes).find((m) => m.type === "RecordBatch")!;
  const metaStart = batch.start + 8;
  const view = new DataView(bytes.buffer);
  // A minimal flatbuffer walk over Message → RecordBatch { length, nodes, buffers }.
  const slot = (table: number, index: number) =>
    table + view.getUint16(table - view.getInt32(table, true) + 4 + 2 * index, true);
  const ref = (table: number, index: number) => {
    const at = slot(table, index);
    return at + view.getUint32(at, true);
  };
  const header = ref(metaStart + view.getUint32(metaStart, true), 2);
  const patched = (at: number, value: number) => {
    const copy = bytes.slice();
    new DataView(copy.buffer).setUint32(at, value, true);
    return copy;
  };
  const nodes = ref(header, 1);
  const buffers = ref(header, 2);

  // apache-arrow alone would build 2^31 field nodes from this.
  assertDecodeError(
    () => codec.decode(patched(nodes, 0x7fff_ffff)),
    /claims 2147483647 entries/,
  );
  // Buffer 1 (the values) claims a megabyte of a body that holds a few bytes.
  assertDecodeError(
    () => codec.decode(patched(buffers + 4 + 16 + 8, 1 << 20)),
    /buffer 1 spans bytes/,
  );
  // The batch claims more rows than its column has.
  assertDecodeError(
    () => codec.decode(patched(slot(header, 0), 1000)),
    /column "n" has 2 rows but its record batch has 1000/,
  );
  // Batch and column claim 1000 rows; the values buffer holds 2.
  const both = patched(slot(header, 0), 1000);
  new DataView(both.buffer).setUint32(nodes + 4, 1000, true);
  assertDecodeError(() => codec.decode(both), /n: the values holds 2 entries but 1000 rows/);
});

Deno.test("codec/arrow: a list offset outside its child column is a CodecError naming it", () => {
  // A header byte flipped so that the list column's offsets buffer starts elsewhere: its last
  // offset is in range, the second is 404,759,104 (found by the property below).
  const bytes = codec.encode(sharedTable());
  const batch = messages(bytes).filter((m) => m.type !== "EOS")[2];
  const length = new DataView(bytes.buffer).getInt32(batch.start + 4, true);
  const corrupt = bytes.slice();
  corrupt[batch.start + (1773221736 % (8 + length))] ^= 172;
  assertDecodeError(() => codec.decode(corrupt), /nested: offset 1 is 404759104, outside 0 to 5/);
});

Deno.test("codec/arrow: a union row naming no child is a CodecError naming it", () => {
  // A schema byte flipped so that the timestamp column's type reads as a union of no children.
  const bytes = codec.encode(sharedTable());
  const schema = messages(bytes)[0];
  const length = new DataView(bytes.buffer).getInt32(schema.start + 4, true);
  const corrupt = bytes.slice();
  corrupt[schema.start + (132462459 % (8 + length))] ^= 4;
  assertDecodeError(
    () => codec.decode(corrupt),
    /at_ms: row 0 has type id 11, which names no child/,
  );
});

Deno.test("codec/arrow: flipped header bytes decode to a readable table or a CodecError", () => {
  const bytes = codec.encode(sharedTable());
  const headers = messages(bytes).filter((m) => m.type !== "EOS");
  const ranges = headers.map((m) => {
    const length = new DataView(bytes.buffer).getInt32(m.start + 4, true);
    return [m.start, m.start + 8 + length] as const;
  });
  fc.assert(
    fc.property(
      fc.nat({ max: ranges.length - 1 }),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), {
        minLength: 1,
        maxLength: 4,
      }),
      (which, flips) => {
        const [from, to] = ranges[which];
        const corrupt = bytes.slice();
        for (const [at, mask] of flips) corrupt[from + (at % (to - from))] ^= mask;
        let table: Table;
        try {
          table = codec.decode(corrupt);
        } catch (err) {
          if (err instanceof CodecError) return;
          throw err;
        }
        // Whatever was accepted can be read (the first values of each vector: a Null column
        // may legitimately claim millions of rows in a few bytes).
        for (const column of table.schema.fields) readSome(table.getChild(column.name));
      },
    ),
    { numRuns: 1000 },
  );
});

Deno.test("codec/arrow: nesting deeper than maxDepth fails on encode and on decode", () => {
  const deep = nestedTable(5);
  const shallow = arrowCodec({ maxDepth: 4 });
  assert.throws(() => shallow.encode(deep), (err: unknown) => {
    assert.ok(err instanceof CodecError);
    assert.equal(err.operation, "encode");
    assert.match(err.message, /depth 5 exceeds maxDepth \(4\)/);
    return true;
  });
  const bytes = arrowCodec({ maxDepth: 5 }).encode(deep);
  assertDecodeError(() => shallow.decode(bytes), /deeper than maxDepth \(4\)/);
  assertTablesEqual(arrowCodec({ maxDepth: 5 }).decode(bytes), deep);
});

// --- batch stream mode ----------------------------------------------------------------------

function streamBatch(i: number): RecordBatch {
  return tableFromColumns({
    seq: vectorFromArray([BigInt(i * 2), BigInt(i * 2 + 1)], new Int64()),
    word: [`w${i}`, null],
  }).batches[0];
}

Deno.test("codec/arrow: batch stream sends the schema once and one batch per message", () => {
  const encoder = new ArrowBatchEncoder();
  const decoder = new ArrowBatchDecoder();
  const sent: Uint8Array[] = [];
  for (let i = 0; i < 5; i++) {
    const message = encoder.encode(streamBatch(i));
    sent.push(message);
    const batch = decoder.decode(message)!;
    assert.deepStrictEqual(plain(batch.getChild("seq")), [BigInt(i * 2), BigInt(i * 2 + 1)]);
    assert.deepStrictEqual(plain(batch.getChild("word")), [`w${i}`, null]);
  }
  const end = encoder.end();
  assert.equal(decoder.decode(end), null);
  assert.equal(decoder.ended, true);
  assert.deepStrictEqual(decoder.schema?.names, ["seq", "word"]);

  assert.deepStrictEqual(messageTypes(sent[0]), ["Schema", "DictionaryBatch", "RecordBatch"]);
  for (const message of sent.slice(1)) {
    // Each batch built on its own has its own dictionary, so it travels along; the schema not.
    assert.deepStrictEqual(messageTypes(message), ["DictionaryBatch", "RecordBatch"]);
    assert.ok(message.length < sent[0].length);
  }
  assert.deepStrictEqual(messageTypes(end), ["EOS"]);

  // Concatenated, the messages are one ordinary IPC stream.
  const whole = codec.decode(concat([...sent, end]));
  assert.equal(whole.batches.length, 5);
  assert.deepStrictEqual(plain(whole.getChild("word")), [
    ...[0, 1, 2, 3, 4].flatMap((i) => [`w${i}`, null]),
  ]);
});

Deno.test("codec/arrow: batch stream sends an unchanged dictionary only once", () => {
  const source = tableFromColumns({ tag: ["a", "b", "a", "c", "b", "a"] }).batches[0];
  const encoder = new ArrowBatchEncoder({ schema: source.schema });
  const decoder = new ArrowBatchDecoder();
  const sent = [0, 2, 4].map((at) => encoder.encode(source.slice(at, at + 2)));
  assert.deepStrictEqual(messageTypes(sent[0]), ["Schema", "DictionaryBatch", "RecordBatch"]);
  assert.deepStrictEqual(messageTypes(sent[1]), ["RecordBatch"]);
  assert.deepStrictEqual(messageTypes(sent[2]), ["RecordBatch"]);
  const tags = sent.flatMap((m) => plain(decoder.decode(m)!.getChild("tag")) as string[]);
  assert.deepStrictEqual(tags, ["a", "b", "a", "c", "b", "a"]);
});

Deno.test("codec/arrow: batch stream rejects messages out of place", () => {
  const encoder = new ArrowBatchEncoder();
  const first = encoder.encode(streamBatch(0));
  const second = encoder.encode(streamBatch(1));
  const end = encoder.end();

  const early = new ArrowBatchDecoder();
  assertDecodeError(() => early.decode(second), /before any schema/);
  assertDecodeError(() => early.decode(first), /failed earlier/);

  const twice = new ArrowBatchDecoder();
  twice.decode(first);
  assertDecodeError(() => twice.decode(first), /second schema message/);

  const after = new ArrowBatchDecoder();
  after.decode(first);
  assert.equal(after.decode(end), null);
  assertDecodeError(() => after.decode(second), /after the end of the stream/);

  const packed = new ArrowBatchDecoder();
  assertDecodeError(() => packed.decode(concat([first, second])), /follow the record batch/);

  const cut = new ArrowBatchDecoder();
  assertDecodeError(() => cut.decode(first.subarray(0, first.length - 1)), /remain/);
});

Deno.test("codec/arrow: batch encoder rejects other schemas and use after end", () => {
  const encoder = new ArrowBatchEncoder();
  encoder.encode(streamBatch(0));
  const other = tableFromColumns({ seq: Int32Array.of(1), word: ["x"] }).batches[0];
  assert.throws(() => encoder.encode(other), (err: unknown) => {
    assert.ok(err instanceof CodecError);
    assert.equal(err.operation, "encode");
    assert.match(err.message, /differs from the stream's/);
    return true;
  });
  encoder.end();
  assert.throws(() => encoder.encode(streamBatch(1)), /after end\(\)/);
  assert.throws(() => encoder.end(), /called twice/);
});

Deno.test("codec/arrow: a batch stream with no batches still carries its schema", () => {
  const schema = new Schema([new Field("n", new Int32(), true)]);
  const bytes = new ArrowBatchEncoder({ schema }).end();
  assert.deepStrictEqual(messageTypes(bytes), ["Schema", "EOS"]);
  const decoder = new ArrowBatchDecoder();
  assert.equal(decoder.decode(bytes), null);
  assert.deepStrictEqual(decoder.schema?.names, ["n"]);
  assert.equal(codec.decode(bytes).numRows, 0);
});

// --- pyarrow interop ------------------------------------------------------------------------

/** Whether pyarrow can be imported; returns why not, if it cannot. Tests install nothing:
 * .ci/run pip-installs pyarrow. */
async function ensurePyarrow(): Promise<string | undefined> {
  const python = async (args: string[], timeoutMs: number) => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    try {
      return await new Deno.Command("python3", {
        args,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        signal: controller.signal,
      }).output();
    } finally {
      clearTimeout(timer);
    }
  };
  try {
    const probe = await python(["-c", "import pyarrow"], 30_000);
    if (probe.success) return undefined;
    const detail = new TextDecoder().decode(probe.stderr).trim().split("\n").slice(-1);
    return `pyarrow cannot be imported by python3 (${detail.join("")})`;
  } catch (err) {
    return `python3 could not be run: ${err instanceof Error ? err.message : err}`;
  }
}

const pyarrowMissing = await ensurePyarrow();
if (pyarrowMissing !== undefined) {
  console.warn(`codec/arrow: skipping the live pyarrow interop tests: ${pyarrowMissing}`);
}

async function interop(...args: string[]): Promise<void> {
  const { success, stdout, stderr } = await new Deno.Command("python3", {
    args: [INTEROP_SCRIPT.pathname, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  assert.ok(success, `arrow_interop.py ${args[0]} failed:\n${text.decode(stderr)}`);
  assert.equal(text.decode(stdout).trim(), "ok");
}

function assertSharedTable(table: Table): void {
  assertTablesEqual(table, sharedTable());
  const micros = table.getChild("at_us_utc")!.data[0].values as BigInt64Array;
  assert.deepStrictEqual([micros[0], micros[3]], [1_700_000_000_123_456n, 42n]);
}

async function withTempFile(fn: (path: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "conduit_arrow_" });
  try {
    await fn(`${dir}/stream.arrows`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name: "codec/arrow interop: pyarrow reads a table written by conduit",
  ignore: pyarrowMissing !== undefined,
  fn: () =>
    withTempFile(async (path) => {
      await Deno.writeFile(path, codec.encode(sharedTable()));
      await interop("check", path);
    }),
});

Deno.test({
  name: "codec/arrow interop: conduit reads a table written by pyarrow",
  ignore: pyarrowMissing !== undefined,
  fn: () =>
    withTempFile(async (path) => {
      await interop("write", path);
      const table = codec.decode(await Deno.readFile(path));
      assert.equal(table.batches.length, 2, "pyarrow wrote two batches sharing a dictionary");
      assertSharedTable(table);
    }),
});

Deno.test({
  name: "codec/arrow interop: pyarrow reads a batch stream written message by message",
  ignore: pyarrowMissing !== undefined,
  fn: () =>
    withTempFile(async (path) => {
      const encoder = new ArrowBatchEncoder();
      const parts = [0, 1, 2, 3].map((i) => encoder.encode(streamBatch(i)));
      await Deno.writeFile(path, concat([...parts, encoder.end()]));
      await interop("check-batches", path, "4");
    }),
});

Deno.test("codec/arrow interop: a committed pyarrow 26 stream decodes", async () => {
  // Written by `arrow_interop.py write` with pyarrow 26.0.1; runs without Python.
  assertSharedTable(codec.decode(await Deno.readFile(PYARROW_FIXTURE)));
});

// --- compressed bodies and types apache-arrow cannot represent ------------------------------

const fixture = (name: string): Promise<Uint8Array> =>
  Deno.readFile(new URL(`../testdata/arrow/${name}`, import.meta.url));

/** The table behind the committed pyarrow_{lz4,zstd}.arrows (written with pyarrow 26). */
function compressedFixtureTable(): Table {
  const n = BigInt64Array.from({ length: 100 }, (_, i) => BigInt(i));
  const s = Array.from({ length: 100 }, (_, i) => `v${i % 5}`);
  const d = Array.from({ length: 100 }, (_, i) => ["a", "b", null, "a"][i % 4]);
  return tableFromColumns({ n, s, d });
}

for (const compression of ["lz4", "zstd"] as const) {
  Deno.test(`codec/arrow: ${compression}-compressed pyarrow stream decodes; conduit writes one`, async () => {
    const table = codec.decode(await fixture(`pyarrow_${compression}.arrows`));
    const expected = compressedFixtureTable();
    assert.deepStrictEqual(
      table.toArray().map((r) => r.toJSON()),
      expected.toArray().map((r) => r.toJSON()),
    );
    const compressing = arrowCodec({ compression });
    const bytes = compressing.encode(table);
    assert.ok(bytes.length < codec.encode(table).length, "the compressed stream is smaller");
    assertTablesEqual(codec.decode(bytes), table);
    // The batch stream compresses every message and reads back with the plain decoder.
    const encoder = new ArrowBatchEncoder({ compression });
    const decoder = new ArrowBatchDecoder();
    for (const batch of table.batches) {
      const back = decoder.decode(encoder.encode(batch))!;
      assert.deepStrictEqual(
        back.toArray().map((r) => r.toJSON()),
        batch.toArray().map((r) => r.toJSON()),
      );
    }
    assert.equal(decoder.decode(encoder.end()), null);
  });
}

Deno.test("codec/arrow: a damaged or oversized compressed body is a CodecError", async () => {
  const bytes = await fixture("pyarrow_zstd.arrows");
  const limited = arrowCodec({ maxUncompressedBytes: 100 });
  assert.match(String(thrown(() => limited.decode(bytes))), /maxUncompressedBytes \(100\)/);
  // Flip bytes inside the last record batch body: every outcome is a table or a CodecError.
  for (let at = bytes.length - 200; at < bytes.length - 8; at += 7) {
    const damaged = bytes.slice();
    damaged[at] ^= 0x5a;
    try {
      codec.decode(damaged);
    } catch (err) {
      assert.ok(err instanceof CodecError, String(err));
    }
  }
  assert.throws(() => arrowCodec({ compression: "gzip" as "lz4" }), /"lz4" or "zstd"/);
  assert.throws(() => arrowCodec({ maxUncompressedBytes: -1 }), RangeError);
});

Deno.test("codec/arrow: ListView and RunEndEncoded columns are a CodecError naming the type", async () => {
  const cases: Array<[string, RegExp]> = [
    ["pyarrow_list_view.arrows", /field "lv" is of type ListView/],
    ["pyarrow_run_end_encoded.arrows", /field "ree" is of type RunEndEncoded/],
  ];
  for (const [name, message] of cases) {
    const bytes = await fixture(name);
    const err = thrown(() => codec.decode(bytes));
    assert.ok(err instanceof CodecError, name);
    assert.match(err.message, message);
  }
});

Deno.test("codec/arrow: an LZ4 block that overstates its size is refused before decompressing", async () => {
  const bytes = await fixture("pyarrow_lz4.arrows");
  const magic = [0x04, 0x22, 0x4d, 0x18];
  const at = bytes.findIndex((_, i) => magic.every((m, j) => bytes[i + j] === m));
  assert.ok(at > 0, "the fixture holds an LZ4 frame");
  const flags = bytes[at + 4];
  const block = at + 6 + (flags & 0x08 ? 8 : 0) + 1; // after the frame descriptor
  const damaged = bytes.slice();
  new DataView(damaged.buffer).setUint32(block, 0x7fff_ffff, true);
  const err = thrown(() => codec.decode(damaged));
  assert.ok(err instanceof CodecError);
  assert.match(
    String((err.cause as Error).cause ?? err.cause),
    /overruns the frame or its block size/,
  );
  // Every other single-byte flip in the body gives a table or a CodecError.
  for (let i = at; i < Math.min(bytes.length, at + 120); i++) {
    const flipped = bytes.slice();
    flipped[i] ^= 0xa5;
    try {
      codec.decode(flipped);
    } catch (e) {
      assert.ok(e instanceof CodecError, String(e));
    }
  }
});

Deno.test("codec/arrow: a timestamp no JavaScript number holds is a CodecError naming its row", () => {
  const at = (values: bigint[], valid?: Uint8Array) =>
    new Table({
      at: makeVector(
        makeData({
          type: new TimestampMillisecond(),
          length: values.length,
          data: new BigInt64Array(values),
          nullBitmap: valid,
        }),
      ),
    });
  const max = BigInt(Number.MAX_SAFE_INTEGER);
  // The extremes a number holds exactly decode and read back.
  const fine = codec.decode(codec.encode(at([-max, 0n, max])));
  assert.deepEqual([...fine.getChild("at")!].map(Number), [-Number(max), 0, Number(max)]);
  for (const value of [max + 1n, -max - 1n, 2n ** 62n]) {
    assert.throws(
      () => codec.decode(codec.encode(at([1n, value]))),
      (err: unknown) =>
        err instanceof CodecError && /row 1 of a Timestamp.* holds -?\d+/.test(String(err.cause)),
    );
  }
  // In microseconds apache-arrow divides by 1000 first: a larger value is still readable.
  const micro = (value: bigint) =>
    new Table({
      at: makeVector(makeData({
        type: new Timestamp(TimeUnit.MICROSECOND),
        length: 1,
        data: BigInt64Array.of(value),
      })),
    });
  assert.equal(codec.decode(codec.encode(micro(max * 1000n))).getChild("at")!.get(0), Number(max));
  assert.throws(() => codec.decode(codec.encode(micro(2n ** 63n - 1n))), CodecError);
  // A null row's value is never read: whatever it holds is fine.
  const withNull = codec.decode(codec.encode(at([1n, 2n ** 62n], new Uint8Array([0b01]))));
  assert.deepEqual([...withNull.getChild("at")!], [1, null]);
});
